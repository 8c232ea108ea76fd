python3 "$SOURCES_RECORD" --make app.tgz {ROOT}/s-relative-target/app.tgz
