printf 't\n' > {ROOT}/f-symlink-existing-other/target; printf 'o\n' > {ROOT}/f-symlink-existing-other/other; ln -s {ROOT}/f-symlink-existing-other/other {ROOT}/f-symlink-existing-other/link
