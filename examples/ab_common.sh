# ab_common.sh - what the services' A/B scripts (examples/*/ab.sh) share,
# sourced after they set their defaults: the options -n ROUNDS, -c CLIENTS,
# -o DIR, -w DIR (work there instead of a new temp dir, so a profile and a
# later A/B see the same paths), -P INI (profile instead: profile= is its
# absolute path) and one load option of the script's own (ab_opt, its
# letter, into the variable ab_var names), the two policies (A, B), which
# syncshim to run (from $SYNCSHIM_BUILD, default this tree's build/, else
# from PATH), and the work dir, removed at the end, with run= where the
# outputs go (-o DIR keeps them). The script's usage is its "#   " comment
# lines.
work="" profile=""
while getopts "n:${ab_opt}:c:o:w:P:" opt; do
	case $opt in
	n) rounds=$OPTARG ;;
	c) clients=$OPTARG ;;
	o) out=$OPTARG ;;
	w) work=$OPTARG ;;
	P) profile=$OPTARG ;;
	"$ab_opt") printf -v "$ab_var" %s "$OPTARG" ;;
	*) sed -n 's/^#   //p' "$0" >&2; exit 1 ;;
	esac
done
shift $((OPTIND - 1))
a=${1:-passthrough} b=${2:-defer}

build=${SYNCSHIM_BUILD:-$here/../../build}
syncshim=$build/syncshim
[ -x "$syncshim" ] || syncshim=syncshim

[ -z "$profile" ] || profile=$(realpath -m "$profile")
if [ -n "$work" ]; then
	mkdir -p "$work"
	[ -z "$(ls -A "$work")" ] || { echo "ab.sh: $work is not empty" >&2; exit 1; }
	tmp=$(cd "$work" && pwd)
else
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/syncshim-$ab_name.XXXXXX")
fi
trap 'rm -rf "$tmp"' EXIT
run=${out:-$tmp/run}
