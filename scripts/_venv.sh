# Sourced by scripts/run, scripts/test and the benchmarks: makes .venv on first use and installs the
# versions of the lock file (requirements.lock; with "[dev]" requirements-dev.lock), then the project
# itself without dependencies. When pyproject.toml or the lock changes (./scripts/lock), the next call
# installs again, so a venv never runs other versions than the lock's.
ensure_venv() {
    local extras="$1" root stamp want lock
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    case "$extras" in
        "") lock="$root/requirements.lock" ;;
        "[dev]") lock="$root/requirements-dev.lock" ;;
        *) echo "ensure_venv: no lock file for extras '$extras'" >&2; return 2 ;;
    esac
    stamp="$root/.venv/.installed$extras"
    want="$(cat "$root/pyproject.toml" "$root/requirements.lock" "$lock" | sha256sum | cut -c1-64)"
    if [ ! -x "$root/.venv/bin/python" ]; then
        echo "Creating .venv (first run) ..." >&2
        python3 -m venv "$root/.venv"
    fi
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
        echo "Installing $(basename "$lock") and the project into .venv ..." >&2
        "$root/.venv/bin/python" -m pip install --quiet --upgrade pip >&2
        "$root/.venv/bin/python" -m pip install --quiet -r "$lock" >&2
        "$root/.venv/bin/python" -m pip install --quiet --no-deps -e "$root" >&2
        echo "$want" > "$stamp"
    fi
}
