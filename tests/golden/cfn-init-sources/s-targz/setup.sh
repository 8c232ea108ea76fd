python3 "$SOURCES_RECORD" --make app.tgz {ROOT}/s-targz/app.tgz; mkdir -p {ROOT}/s-targz/dest/app; echo keep > {ROOT}/s-targz/dest/keep.txt; echo old > {ROOT}/s-targz/dest/app/run.sh
