python3 "$SOURCES_RECORD" --make traversal.tar {ROOT}/s-traversal/traversal.tar
