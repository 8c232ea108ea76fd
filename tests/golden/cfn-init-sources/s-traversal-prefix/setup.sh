python3 "$SOURCES_RECORD" --make prefix.tar {ROOT}/s-traversal-prefix/prefix.tar
