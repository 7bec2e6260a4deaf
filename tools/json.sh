# tools/json.sh: sourced by tools/smoke and tools/rdma-check for their --json output.
# shellcheck shell=bash

# json_str_v VAR TEXT: TEXT as a JSON string into VAR (ASCII only; other bytes dropped, and
# trailing newlines). No fork: rdma-check makes one per check, and a fork costs tens of
# milliseconds in an emulated VM.
json_str_v() {
    local LC_ALL=C _s=$2 # C: one character per byte, whatever the caller's locale
    _s=${_s//[!$'\t\n'\ -~]/}
    while [[ $_s == *$'\n' ]]; do _s=${_s%$'\n'}; done
    _s=${_s//\\/\\\\}
    _s=${_s//\"/\\\"}
    _s=${_s//$'\n'/\\n}
    _s=${_s//$'\t'/\\t}
    printf -v "$1" '"%s"' "$_s"
}
# json_str TEXT: the same on stdout.
json_str() {
    local j
    json_str_v j "$1"
    printf '%s' "$j"
}
