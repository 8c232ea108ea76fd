mkdir {ROOT}/c-cwd/sub
