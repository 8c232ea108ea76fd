python3 "$SOURCES_RECORD" --make not-an-archive.txt {ROOT}/s-unsupported/not-an-archive.txt
