python3 "$SOURCES_RECORD" --make absolute.tar {ROOT}/s-absolute/absolute.tar
