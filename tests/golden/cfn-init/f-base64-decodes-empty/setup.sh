printf 'old\n' > {ROOT}/f-base64-decodes-empty/e; chmod 0640 {ROOT}/f-base64-decodes-empty/e; printf 'older\n' > {ROOT}/f-base64-decodes-empty/e.bak
