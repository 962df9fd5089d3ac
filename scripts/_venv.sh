# Sourced by scripts/run, scripts/test and the benchmarks: makes .venv on first use and installs the
# versions of the lock file (requirements.lock; with "[dev]" requirements-dev.lock), then the project
# itself without dependencies. When pyproject.toml or the lock changes (./scripts/lock), the next call
# installs again, so a venv never runs other versions than the lock's.
_venv_lock() {
    case "$1" in
        "") echo "$2/requirements.lock" ;;
        "[dev]") echo "$2/requirements-dev.lock" ;;
        *) echo "ensure_venv: no lock file for extras '$1'" >&2; return 2 ;;
    esac
}

_venv_want() {
    cat "$2/pyproject.toml" "$2/requirements.lock" "$(_venv_lock "$1" "$2")" | sha256sum | cut -c1-64
}

_venv_ready() {
    [ -f "$2/.venv/.installed$1" ] && [ "$(cat "$2/.venv/.installed$1")" = "$(_venv_want "$1" "$2")" ]
}

# answer_help EXTRAS SCRIPT ARGS...: with -h or --help among ARGS, nothing is installed (that would be acting):
# with a .venv ready (the dev one serves every script) the script's own --help answers, else this prints
# SCRIPT's header comment and exits 0.
answer_help() {
    local extras="$1" script="$2" root arg
    shift 2
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    for arg in "$@"; do
        case "$arg" in
            -h|--help)
                if _venv_ready "$extras" "$root" || _venv_ready "[dev]" "$root"; then
                    _ZAMETANO_HELP=1
                    return 0
                fi
                sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$script"
                exit 0 ;;
            --) return 0 ;;
        esac
    done
}

ensure_venv() {
    local extras="$1" root stamp want lock
    [ -z "${_ZAMETANO_HELP:-}" ] || return 0  # answer_help found a .venv ready to answer --help
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    lock="$(_venv_lock "$extras" "$root")" || return 2
    stamp="$root/.venv/.installed$extras"
    want="$(_venv_want "$extras" "$root")"
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
