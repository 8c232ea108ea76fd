printf 't\n' > {ROOT}/f-symlink-existing-same/target; ln -s {ROOT}/f-symlink-existing-same/target {ROOT}/f-symlink-existing-same/link
