# Sourced by scripts/run and scripts/test: makes .venv on first use and
# re-installs when pyproject.toml changes, so a stale venv never runs old deps.
ensure_venv() {
    local extras="$1" root stamp want
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    stamp="$root/.venv/.installed$extras"
    want="$(sha256sum "$root/pyproject.toml" | cut -c1-64)"
    if [ ! -x "$root/.venv/bin/python" ]; then
        echo "Creating .venv (first run) ..." >&2
        python3 -m venv "$root/.venv"
    fi
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
        echo "Installing the project into .venv ..." >&2
        "$root/.venv/bin/python" -m pip install --quiet --upgrade pip >&2
        "$root/.venv/bin/python" -m pip install --quiet -e "$root$extras" >&2
        echo "$want" > "$stamp"
    fi
}
