printf 'old\n' > {ROOT}/f-existing-with-mode/x; chmod 0755 {ROOT}/f-existing-with-mode/x
