python3 "$SOURCES_RECORD" --make app.tbz {ROOT}/s-tarbz2/app.tbz
