# ab_common.sh - what the services' A/B scripts (examples/*/ab.sh) share,
# sourced after they set their defaults: the options -n ROUNDS, -c CLIENTS,
# -o DIR and one load option of the script's own (ab_opt, its letter, into
# the variable ab_var names), the two policies (A, B), which syncshim to
# run (from $SYNCSHIM_BUILD, default this tree's build/, else from PATH),
# and a temp dir, removed at the end, with run= where the outputs go (-o
# DIR keeps them). The script's usage is its "#   " comment lines.
while getopts "n:${ab_opt}:c:o:" opt; do
	case $opt in
	n) rounds=$OPTARG ;;
	c) clients=$OPTARG ;;
	o) out=$OPTARG ;;
	"$ab_opt") printf -v "$ab_var" %s "$OPTARG" ;;
	*) sed -n 's/^#   //p' "$0" >&2; exit 1 ;;
	esac
done
shift $((OPTIND - 1))
a=${1:-passthrough} b=${2:-defer}

build=${SYNCSHIM_BUILD:-$here/../../build}
syncshim=$build/syncshim
[ -x "$syncshim" ] || syncshim=syncshim

tmp=$(mktemp -d "${TMPDIR:-/tmp}/syncshim-$ab_name.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
run=${out:-$tmp/run}
