printf 't\n' > {ROOT}/f-symlink-same-file-hardlink/target; ln {ROOT}/f-symlink-same-file-hardlink/target {ROOT}/f-symlink-same-file-hardlink/link
