mkdir {ROOT}/f-path-is-directory/dir; echo inner > {ROOT}/f-path-is-directory/dir/inner
