python3 "$SOURCES_RECORD" --make app.tar {ROOT}/s-tar/app.tar
