# Sourced by .ci/install-peers and .ci/install-adapters (which set $python).
# new_venv DIR ARG...: a fresh venv at DIR with `pip install ARG...` done in it: by uv when $UV
# names it (.ci/setup sets it: about ten times faster here, README), else by venv and pip.
new_venv() {
    local venv="$1"
    shift
    rm -rf "$venv"
    if [[ -n "${UV:-}" ]]; then
        UV_PYTHON_DOWNLOADS=never "$UV" venv --quiet --python "$python" "$venv"
        "$UV" pip install --quiet --python "$venv/bin/python" "$@"
    else
        "$python" -m venv "$venv"
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
    fi
}
