#!/usr/bin/env bash
# check_docs.sh BUILD [MANDIR] - the man pages name everything the code accepts.
#
# MANDIR defaults to docs/man; tests/system/test_install.c runs it. Extracts,
# mechanically, from the code and from the built tools:
#   - the ini keys of the key table in policy/policy.c, and every value of
#     its name tables (policies, osync, real_sync, on_close, log_mode,
#     unreported_errors, the boolean words);
#   - the environment variables getenv() reads in shim/ and tools/;
#   - the subcommands and options in the usage the tools print, in their
#     getopt strings and long-option tables, and in the words their main()
#     compares argv with;
# and looks each up among the terms the man pages mark up (from mandoc's
# parse tree: Cm for commands, keys and values, Fl for options, Ev for
# variables; a key needs an ".It Cm key" item of its own). Prints one line per missing name, "MAN: missing KIND NAME
# (from WHERE)", and exits 1 if any; 0 when all are there.
set -euo pipefail

build=$(realpath "${1:?usage: check_docs.sh BUILD [MANDIR]}")
man=$(realpath "${2:-$(dirname "$0")/../../docs/man}")
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for f in policy/policy.c tools/syncshim/syncshim.c tools/syncshim/ab.c tools/syncshim/crashtest.c tools/synclat/synclat_cli.c tools/synclat/top/top.c tools/synclat/metrics/metrics_out.c \
	"$build/syncshim" "$build/synclat" "$man/syncshim.1" "$man/synclat.1" "$man/syncshim.ini.5"; do
	[ -e "$f" ] || { echo "check_docs: $f is missing (run make first)"; exit 2; }
done

# The marked-up terms of a page, one "Macro text" a line: "Fl --csv",
# "Cm report", "Ev SYNCSHIM_LOG". Fl's text is the flag without its
# leading '-' (mandoc writes "\-csv" for --csv).
terms() {
	mandoc -Ttree "$1" | awk '
	function indent(s) { match(s, /^ */); return RLENGTH }
	{
		ind = indent($0)
		if (mac != "" && ind <= mind)
			mac = ""
		if (mac != "" && $0 ~ / \(text\)/) {
			t = $0
			sub(/^ */, "", t)
			sub(/ \(text\).*$/, "", t)
			gsub(/\\-/, "-", t)
			gsub(/\\&/, "", t)
			print mac " " (mac == "Fl" ? "-" : "") t
		}
		if ($0 ~ /^ *(Fl|Cm|Ev) \(elem\)/) {
			mac = $1
			mind = ind
		}
	}' | sort -u
}

missing=0
# want PAGE KIND MACRO NAME WHERE
want() {
	if ! grep -qxF -- "$3 $4" "$tmp/$1.terms"; then
		echo "$1: missing $2 $4 (from $5)"
		missing=$((missing + 1))
	fi
}

for page in syncshim.1 synclat.1 syncshim.ini.5; do
	terms "$man/$page" > "$tmp/$page.terms"
done

# ---- ini keys and values: policy/policy.c ---------------------------------
sed -n 's/^[[:space:]]*\[K_[A-Z0-9_]*\] = { KEY("\([a-z0-9_]*\)".*/\1/p' policy/policy.c > "$tmp/keys"
if [ "$(wc -l < "$tmp/keys")" -lt 10 ]; then
	echo "check_docs: found $(wc -l < "$tmp/keys") keys in policy/policy.c's key table; fix the extraction"
	exit 2
fi
# A key is documented by an item of its own: ".It Cm max_delay_ms No = ...".
sed -n 's/^\.It Cm \([a-z0-9_]*\).*/Item \1/p' "$man/syncshim.ini.5" >> "$tmp/syncshim.ini.5.terms"
while read -r k; do want syncshim.ini.5 key Item "$k" "policy/policy.c keys[]"; done < "$tmp/keys"

# Every string in the name tables ("static const char *const X_names[...] =
# { ... };", which may span lines) and set_bool's words.
awk '/(_names\[[A-Z_]*\]|words\[\]) = \{/ { on = 1 }
     on { line = $0
	  while (match(line, /"[^"]*"/)) { print substr(line, RSTART + 1, RLENGTH - 2); line = substr(line, RSTART + RLENGTH) } }
     on && /\};/ { on = 0 }' policy/policy.c | sort -u > "$tmp/values"
if [ "$(wc -l < "$tmp/values")" -lt 10 ]; then
	echo "check_docs: found $(wc -l < "$tmp/values") values in policy/policy.c's name tables; fix the extraction"
	exit 2
fi
while read -r v; do want syncshim.ini.5 value Cm "$v" "policy/policy.c name tables"; done < "$tmp/values"

# ---- environment: every getenv("NAME") of the shim and the tools --------
grep -rohE --include='*.c' 'getenv\("[A-Za-z_][A-Za-z0-9_]*"\)' shim tools | sed 's/getenv("\(.*\)")/\1/' | sort -u > "$tmp/env"
[ -s "$tmp/env" ] || { echo "check_docs: no getenv() found in shim/ and tools/; fix the extraction"; exit 2; }
while read -r e; do want syncshim.1 variable Ev "$e" "getenv() in shim/, tools/"; done < "$tmp/env"

# ---- subcommands and options -------------------------------------------
# opts PAGE WHERE: options and subcommands in text on stdin, as
# "Fl -x" / "Fl --long" / "Cm word" lines.
usage_terms() {
	# "usage: TOOL SUB ..." and "       TOOL SUB ...": SUB is a subcommand.
	sed -n 's/^\(usage:\)\{0,1\}[[:space:]]*\(syncshim\|synclat\) \([a-z][a-z]*\).*/Cm \3/p'
}
option_terms() {
	grep -oE '(^|[^A-Za-z0-9_-])--?[A-Za-z][A-Za-z0-9-]*' | sed 's/^[^-]*//; s/^/Fl /'
}
check_terms() { # PAGE WHERE < terms
	while read -r mac name; do
		case $mac in
		Fl) want "$1" option Fl "$name" "$2" ;;
		Cm) want "$1" subcommand Cm "$name" "$2" ;;
		esac
	done
}

# What the tools print: --help, then -h of every subcommand it names.
for tool in syncshim synclat; do
	"$build/$tool" --help > "$tmp/$tool.usage" 2>&1
	for sub in $(usage_terms < "$tmp/$tool.usage" | sed 's/^Cm //' | sort -u); do
		"$build/$tool" "$sub" -h >> "$tmp/$tool.usage" 2>&1
	done
done
for tool in syncshim synclat; do
	[ -s "$tmp/$tool.usage" ] || { echo "check_docs: $build/$tool printed no usage"; exit 2; }
	# (Through a file: check_terms at the end of a pipe would count what
	# is missing in a subshell, and the count would be lost.)
	{ usage_terms < "$tmp/$tool.usage"; option_terms < "$tmp/$tool.usage"; } | sort -u > "$tmp/$tool.uterms"
	check_terms "$tool.1" "$tool --help" < "$tmp/$tool.uterms"
done

# What the code accepts: getopt strings, long-option tables, the words
# main() compares argv with.
source_terms() { # FILE...
	set +o pipefail # (runs in a subshell) a file may have none of one kind
	# getopt(argc, argv, "+c:p:o:m:h") and getopt_long(..., c ? "a:b:h" : "h", ...)
	grep -ohE 'getopt(_long)?\([^;]*' "$@" | grep -oE '"[^"]*"' | tr -d '"+:' |
		fold -w1 | sed -n 's/^\([A-Za-z0-9]\)$/Fl -\1/p'
	# { "per-second", no_argument, ... }
	grep -ohE '\{ *"[a-z][a-z0-9-]*", *(no|required|optional)_argument' "$@" |
		sed 's/^{ *"\([^"]*\)".*/Fl --\1/'
	# strcmp(sub, "run"), !strcmp(cmd, "--help")
	grep -ohE 'strcmp\((sub|cmd), *"[^"]*"\)' "$@" | sed 's/.*"\(.*\)")/\1/' |
		sed '/^-/s/^/Fl /; /^Fl /!s/^/Cm /'
	# the dispatch tables (tools/common/tool.h): { "run", cmd_run, RUN_SYNOPSIS }
	grep -ohE '^[[:space:]]*\{ *"[a-z]+", *(cmd_[a-z_]+|[a-z_]+_main)' "$@" | sed 's/^[^"]*"\([^"]*\)".*/Cm \1/'
}
syncshim_src="tools/common/tool.c $(find tools/syncshim -name '*.c' | sort | tr '\n' ' ')"
synclat_src="tools/common/tool.c $(find tools/synclat -name '*.c' | sort | tr '\n' ' ')"
# shellcheck disable=SC2086 # word splitting of the file lists is wanted
source_terms $syncshim_src | sort -u > "$tmp/syncshim.src"
# shellcheck disable=SC2086
source_terms $synclat_src | sort -u > "$tmp/synclat.src"
for tool in syncshim synclat; do
	grep -q '^Cm ' "$tmp/$tool.src" && grep -q '^Fl ' "$tmp/$tool.src" ||
		{ echo "check_docs: no subcommands or options found in $tool's source; fix the extraction"; exit 2; }
done
check_terms syncshim.1 "$syncshim_src" < "$tmp/syncshim.src"
check_terms synclat.1 "$synclat_src" < "$tmp/synclat.src"

if [ "${CHECK_DOCS_SHOW:-}" = 1 ]; then
	for f in keys values env syncshim.src synclat.src; do echo "== $f"; tr '\n' ' ' < "$tmp/$f"; echo; done
	{ usage_terms < "$tmp/syncshim.usage"; option_terms < "$tmp/syncshim.usage"; } | sort -u | tr '\n' ' '; echo
	{ usage_terms < "$tmp/synclat.usage"; option_terms < "$tmp/synclat.usage"; } | sort -u | tr '\n' ' '; echo
fi
if [ "$missing" -gt 0 ]; then
	echo "check_docs: $missing name(s) missing from the man pages in $man"
	exit 1
fi
echo "check_docs: $(wc -l < "$tmp/keys") keys, $(wc -l < "$tmp/values") values, $(wc -l < "$tmp/env") variables, every subcommand and option: all in $man"
