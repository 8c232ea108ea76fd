python3 "$SOURCES_RECORD" --make zip-traversal.zip {ROOT}/s-zip-traversal/zip-traversal.zip
