python3 "$SOURCES_RECORD" --make app.tgz {ROOT}/s-two-targets/app.tgz
