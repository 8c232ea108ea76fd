python3 "$SOURCES_RECORD" --make mixed.zip {ROOT}/s-zip/mixed.zip
