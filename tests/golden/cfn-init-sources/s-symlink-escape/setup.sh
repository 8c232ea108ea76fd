python3 "$SOURCES_RECORD" --make symlink-escape.tar {ROOT}/s-symlink-escape/symlink-escape.tar; mkdir {ROOT}/s-symlink-escape/outside
