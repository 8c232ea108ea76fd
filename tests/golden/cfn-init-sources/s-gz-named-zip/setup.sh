python3 "$SOURCES_RECORD" --make app-gz-named.zip {ROOT}/s-gz-named-zip/app-gz-named.zip
