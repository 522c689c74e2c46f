//! The option tables: every option of every program the classification reads, each with
//! what it takes and what it does (see `getopt.rs` for the notation and the parsing
//! rules). The lists come from the programs' own `--help` (and, for git, `git CMD -h` and
//! `git CMD --git-completion-helper`) of the versions this project's CI installs (Debian
//! bookworm's coreutils 9.1, findutils 4.9, grep 3.8, diffutils, file 5.44, tar 1.34,
//! util-linux, procps, git 2.47); the integration test `option_tables_are_complete` runs
//! them again and fails on an option a table does not list. The effects are classified by
//! hand: an option not listed is unknown, which is never read-only.

use std::sync::OnceLock;

use crate::getopt::{Style, Table, TableError};

/// GNU `getopt_long`: options and operands in any order.
const GNU: Style = Style {
    stop_at_operand: false,
    negations: false,
    digits: false,
    exact: false,
    equals_short: false,
    next_word_values: false,
    bsd: false,
};
/// GNU, plus the obsolete `-NUM` (`head -5`, `grep -2`).
const DIGITS: Style = Style {
    digits: true,
    ..GNU
};
/// A wrapper: options end at the command (`+` in the option string).
const WRAP: Style = Style {
    stop_at_operand: true,
    ..GNU
};
/// `nice -10 CMD`.
const WRAP_DIGITS: Style = Style {
    digits: true,
    ..WRAP
};
/// Options matched exactly (no abbreviation).
const EXACT: Style = Style { exact: true, ..GNU };
/// git's parse-options: abbreviations and `--no-` negations.
const GIT: Style = Style {
    negations: true,
    ..GNU
};
/// git's revision and diff options (`git log`, `git diff`, `git show`): parsed by hand
/// inside git, exactly, with `--no-` forms and `-NUM`.
const GIT_EXACT: Style = Style {
    negations: true,
    exact: true,
    digits: true,
    ..GNU
};
/// git's own options before the subcommand, matched exactly; they end at the subcommand.
const GIT_GLOBAL: Style = Style {
    stop_at_operand: true,
    exact: true,
    ..GNU
};
/// clap (`fd`) and lexopt (`rg`): long options matched exactly, `-x=VALUE` is `VALUE`.
const CLAP: Style = Style {
    exact: true,
    equals_short: true,
    ..GNU
};
/// tree's own parser: long options matched exactly, a short option's value is the next
/// unused word even inside a bundle.
const TREE: Style = Style {
    exact: true,
    next_word_values: true,
    ..GNU
};
/// procps `ps`: Unix options after a dash, GNU long options matched exactly, BSD options in
/// words without a dash (`+x` in the table).
const PS: Style = Style {
    exact: true,
    bsd: true,
    ..GNU
};
/// A bash builtin: short options only, no abbreviation, ending at the first operand.
const BUILTIN: Style = Style {
    exact: true,
    stop_at_operand: true,
    ..GNU
};

/// The revision, log and diff options of `git log`, `git show`, `git diff`, `git reflog
/// show`, `git stash show` (from `git diff -h`, `git log -h`, `git rev-list -h`, their
/// `--git-completion-helper`, and git's documented revision options).
const GIT_FAMILY: &str = r"
-p --patch
-s --no-patch
-u
-U=? --unified=?
-W --function-context
--raw
--patch-with-raw
--patch-with-stat
--numstat
--shortstat
-X=? --dirstat=?
--cumulative
--dirstat-by-file=?
--check
--summary
--name-only
--name-status
--stat=?
--stat-width=
--stat-name-width=
--stat-graph-width=
--stat-count=
--compact-summary
--binary
--full-index
--color=?
--ws-error-highlight=
-z
--abbrev=?
--src-prefix=
--dst-prefix=
--line-prefix=
--no-prefix
--default-prefix
--inter-hunk-context=
--output-indicator-new=
--output-indicator-old=
--output-indicator-context=
-B=? --break-rewrites=?
-M=? --find-renames=?
-D --irreversible-delete
-C=? --find-copies=?
--find-copies-harder
--no-renames
--rename-empty
--follow
-l=
--minimal
-w --ignore-all-space
-b --ignore-space-change
--ignore-space-at-eol
--ignore-cr-at-eol
--ignore-blank-lines
-I= --ignore-matching-lines=
--indent-heuristic
--patience
--histogram
--diff-algorithm=
--anchored=
--word-diff=?
--word-diff-regex=
--color-words=?
--color-moved=?
--color-moved-ws=
--relative=?
-a --text
-R
--exit-code
--quiet
--ext-diff opaque
--textconv opaque
--ignore-submodules=?
--submodule=?
--ita-invisible-in-index
--ita-visible-in-index
-S=
-G=
--pickaxe-all
--pickaxe-regex
-O= read
--rotate-to=
--skip-to=
--find-object=
--diff-filter=
--output= write
-q
--source
--use-mailmap
--mailmap
--clear-decorations
--decorate-refs=
--decorate-refs-exclude=
--decorate=?
-L=
--max-count=
--max-age=
--min-age=
--sparse
--no-merges
--min-parents=
--no-min-parents
--max-parents=
--no-max-parents
--remove-empty
--all
--branches
--tags
--remotes
--stdin
--exclude-hidden=
--topo-order
--date-order
--reverse
--parents
--children
--objects
--disk-usage=?
--unpacked
--header
--object-names
--abbrev-commit
--left-right
--count
--bisect
--bisect-vars
--bisect-all
--oneline
--pretty=?
--format=
-n=
--skip=
--since= --after= --since-as-filter=
--until= --before=
--author=
--committer=
--grep=
--grep-reflog=
--all-match
--invert-grep
-i --regexp-ignore-case
--basic-regexp
-E --extended-regexp
-F --fixed-strings
-P --perl-regexp
--merges
--first-parent
--exclude-first-parent-only
--not
--glob=
--exclude=
--reflog
--alternate-refs
--single-worktree
--ignore-missing
--cherry-mark
--cherry-pick
--left-only
--right-only
--cherry
-g --walk-reflogs
--merge
--boundary
--simplify-by-decoration
--show-pulls
--full-history
--dense
--simplify-merges
--ancestry-path=?
--author-date-order
--no-walk=?
--do-walk
--encoding=
--expand-tabs=?
--notes=?
--show-notes=?
--show-notes-by-default
--standard-notes
--show-signature
--relative-date
--date=
--graph
--show-linear-break=?
-c
--cc
--dd
--combined-all-paths
-m
--diff-merges=
--remerge-diff
-t
--log-size
--full-diff
--no-abbrev-commit
--no-color
--no-expand-tabs
--no-notes
--no-standard-notes
--no-decorate
--no-graph
--no-ext-diff
--no-textconv
--no-index unsafe
--cached
--staged
--merge-base
--base
--ours
--theirs
--include-untracked
--only-untracked
-h
";

/// Every table: the program names (a git subcommand as `git NAME`), how the program reads
/// its words, and its options.
#[rustfmt::skip]
const TABLES: &[(&[&str], Style, &str)] = &[
    (&["git log", "git show", "git diff", "git whatchanged", "git reflog show", "git stash show"], GIT_EXACT, GIT_FAMILY),
    (&["git"], GIT_GLOBAL, r"
-v --version
-h --help
-C= opaque
-c= opaque
--exec-path=? opaque
--html-path
--man-path
--info-path
-p --paginate
-P --no-pager
--no-replace-objects
--no-lazy-fetch
--no-optional-locks
--no-advice
--bare opaque
--git-dir= opaque
--work-tree= opaque
--namespace=
--config-env= opaque
--literal-pathspecs
--glob-pathspecs
--noglob-pathspecs
--icase-pathspecs
--list-cmds=
--attr-source= opaque
--super-prefix= opaque
"),
    (&["git rev-parse"], EXACT, r"
--parseopt
--sq-quote
--keep-dashdash
--stop-at-non-option
--stuck-long
--revs-only
--no-revs
--flags
--no-flags
--default=
--prefix=
--verify
-q --quiet
--sq
--short=?
--not
--abbrev-ref=?
--symbolic
--symbolic-full-name
--output-object-format=
--all
--branches=?
--tags=?
--remotes=?
--glob=
--exclude=
--exclude-hidden=
--disambiguate=
--local-env-vars
--path-format=
--git-dir
--git-common-dir
--resolve-git-dir=
--git-path=
--show-toplevel
--show-superproject-working-tree
--shared-index-path
--absolute-git-dir
--is-inside-git-dir
--is-inside-work-tree
--is-bare-repository
--is-shallow-repository
--show-cdup
--show-prefix
--show-object-format=?
--show-ref-format
--since= --after=
--until= --before=
"),
    (&["git config"], GIT, r"
--global
--system
--local
--worktree
-f= --file= read
--blob=
--get
--get-all
--get-regexp
--get-urlmatch
--get-color
--get-colorbool
--replace-all write
--add write
--unset write
--unset-all write
--rename-section write
--remove-section write
-l --list
--fixed-value
-e --edit write
--type=
--bool
--int
--bool-or-int
--path
--expiry-date
-z --null
--name-only
--show-origin
--show-scope
--includes
--default=
--all
--regexp
--value=
--url=
--comment= write
--append write
"),
    (&["git stash list", "git worktree list", "git var", "git remote get-url", "git remote show", "git reflog"], GIT, r"
-v --verbose
--porcelain
-z
-l
--push
--all
-n
--expire=
"),
    // sudo 1.9 (Debian's): `-R DIR` looks the command up inside another root, so what runs
    // is not what the line names; `-e` runs an editor.
    (&["sudo"], WRAP, r"
-A --askpass
-b --background
-B --bell
-C= --close-from=
-D= --chdir=
-E --preserve-env=?
-e --edit nocmd opaque
-g= --group=
-H --set-home
-h=? --help
--host=
-i --login shell
-K --remove-timestamp nocmd
-k --reset-timestamp
-l --list nocmd
-N --no-update
-n --non-interactive
-P --preserve-groups
-p= --prompt=
-R= --chroot= opaque
-r= --role=
-S --stdin
-s --shell shell
-t= --type=
-T= --command-timeout=
-U= --other-user=
-u= --user=
-V --version nocmd
-v --validate nocmd
"),
    (&["find"], EXACT, r"
-H
-L
-P
-D=
-O=
"),
    (&["jq"], EXACT, r"
-c --compact-output
-n --null-input
-e --exit-status
-s --slurp
-r --raw-output
-j --join-output
-a --ascii-output
-R --raw-input
-C --color-output
-M --monochrome-output
-S --sort-keys
--tab
--indent=
--unbuffered
--stream
--seq
-f= --from-file= opaque
-L= opaque
--arg unsafe
--argjson unsafe
--slurpfile unsafe
--rawfile unsafe
--args unsafe
--jsonargs unsafe
-h --help
-V --version
"),
    // ripgrep 15.2.0, the version `cargo xtask peers` pins: every flag its `--help` lists,
    // the `--no-…` forms it names there, and the aliases of its flag definitions
    // (`--maxdepth`, `--passthrough`). Matched exactly (lexopt); `-e=PAT` is `PAT`.
    // `--pre-glob` only narrows which files `--pre` runs on, so it runs nothing alone.
    (&["rg"], CLAP, r"
-A= --after-context=
--auto-hybrid-regex
--no-auto-hybrid-regex
-B= --before-context=
--binary
--no-binary
--block-buffered
--no-block-buffered
-b --byte-offset
--no-byte-offset
-s --case-sensitive
--color=
--colors=
--column
--no-column
-C= --context=
--context-separator=
--no-context-separator
-c --count
--count-matches
--crlf
--no-crlf
--debug
--dfa-size-limit=
-E= --encoding=
--no-encoding
--engine=
--field-context-separator=
--field-match-separator=
-f= --file= read pattern
--files pattern
-l --files-with-matches
--files-without-match
-F --fixed-strings
--no-fixed-strings
-L --follow
--no-follow
--generate=
-g= --glob=
--glob-case-insensitive
--no-glob-case-insensitive
--heading
--no-heading
-h --help
-. --hidden
--no-hidden
--hostname-bin= run
--hyperlink-format=
--iglob=
-i --ignore-case
--ignore-file= read
--ignore-file-case-insensitive
--no-ignore-file-case-insensitive
--include-zero
--no-include-zero
-v --invert-match
--no-invert-match
--json
--no-json
--line-buffered
--no-line-buffered
-n --line-number
-N --no-line-number
-x --line-regexp
-M= --max-columns=
--max-columns-preview
--no-max-columns-preview
-m= --max-count=
-d= --max-depth= --maxdepth=
--max-filesize=
--mmap
--no-mmap
-U --multiline
--no-multiline
--multiline-dotall
--no-multiline-dotall
--no-config
--no-ignore
--ignore
--no-ignore-dot
--ignore-dot
--no-ignore-exclude
--ignore-exclude
--no-ignore-files
--ignore-files
--no-ignore-global
--ignore-global
--no-ignore-messages
--ignore-messages
--no-ignore-parent
--ignore-parent
--no-ignore-vcs
--ignore-vcs
--no-messages
--messages
--no-pcre2-unicode
--pcre2-unicode
--no-require-git
--require-git
--no-unicode
--unicode
-0 --null
--null-data
--one-file-system
--no-one-file-system
-o --only-matching
--path-separator=
--passthru --passthrough
-P --pcre2
--no-pcre2
--pcre2-version
--pre= run
--no-pre
--pre-glob=
-p --pretty
-q --quiet
--regex-size-limit=
-e= --regexp= pattern
-r= --replace=
-z --search-zip opaque
--no-search-zip
-S --smart-case
--sort-files
--no-sort-files
--sort=
--sortr=
--stats
--no-stats
--stop-on-nonmatch
-a --text
--no-text
-j= --threads=
--trace
--trim
--no-trim
-t= --type=
--type-add=
--type-clear=
-T= --type-not=
--type-list
-u --unrestricted
-V --version
--vimgrep
-H --with-filename
-I --no-filename
-w --word-regexp
"),
    // fd 8.6 (Debian's `fd-find`, run as `fdfind`): clap, long options matched exactly,
    // `-x=CMD` is `CMD`; `-x`/`-X` take the words up to `;` as a command and its arguments.
    // The hidden aliases and `--no-…` forms its help names are listed too. `-l` runs
    // `ls -l` on the results, a reading command.
    (&["fd", "fdfind"], CLAP, r"
-H --hidden
--no-hidden
-I --no-ignore
--ignore
--no-ignore-vcs
--ignore-vcs
--no-ignore-parent
--no-global-ignore-file
-u --unrestricted
-s --case-sensitive
-i --ignore-case
-g --glob
--regex
-F --fixed-strings
--and=
-a --absolute-path
--relative-path
-l --list-details
-L --follow --dereference
--no-follow
-p --full-path
-0 --print0
-d= --max-depth= --maxdepth=
--min-depth=
--exact-depth=
-E= --exclude=
--prune
-t= --type=
-e= --extension=
-S= --size=
--changed-within= --change-newer-than= --newer= --changed-after=
--changed-before= --change-older-than= --older=
-o= --owner=
-x=; --exec=; run
-X=; --exec-batch=; run
--batch-size=
--ignore-file= read
-c= --color=
-j= --threads=
--max-results=
-1
-q --quiet --has-results
--show-errors
--base-directory= unsafe
--path-separator=
--search-path= read recurse
--strip-cwd-prefix
--one-file-system --mount --xdev
--gen-completions=?
--max-buffer-time=
-h --help
-V --version
"),
    // tree 2.1: its own parser; long options matched exactly, a short option's value is the
    // next unused word (`-La 2`). `-R` writes `00Tree.html` into every directory at the
    // depth limit.
    (&["tree"], TREE, r"
-a
-d
-l
-f
-x
-L=
-R write
-P=
-I=
--gitignore
--gitfile= read
--ignore-case
--matchdirs
--metafirst
--prune
--info
--infofile= read
--noreport
--charset=
--filelimit=
-o= write
-q
-N
-Q
-p
-u
-g
-s
-h
--si
--du
-D
--timefmt=
-F
--inodes
--device
-v
-t
-c
-U
-r
--dirsfirst
--filesfirst
--sort=
-i
-A
-S
-n
-C
-X
-J
-H=
-T=
--nolinks
--hintro= read
--houtro= read
--fromfile
--fflinks
--version
--help
"),
    // man-db 2.11 (argp, so getopt_long's prefixes, plus argp's hidden `--program-name` and
    // `--HANG`). A pager or browser is a command; a configuration file names programs; the
    // preprocessors and gxditview are programs the line does not name.
    (&["man"], GNU, r"
-C= --config-file= opaque
-d --debug
-D --default
--warnings=?
-f --whatis
-k --apropos
-K --global-apropos
-l --local-file
-w --where --path --location
-W --where-cat --location-cat
-c --catman write
-R= --recode=
-L= --locale=
-m= --systems=
-M= --manpath= read
-S= -s= --sections=
-e= --extension=
-i --ignore-case
-I --match-case
--regex
--wildcard
--names-only
-a --all
-u --update write
--no-subpages
-P= --pager= run
-r= --prompt=
-7 --ascii
-E= --encoding=
--no-hyphenation --nh
--no-justification --nj
-p= --preprocessor= opaque
-t --troff
-T=? --troff-device=?
-H=? --html=? run
-X=? --gxditview=? opaque
-Z --ditroff
-? --help
--usage
-V --version
--program-name=
--HANG=?
"),
    // hostname 3.23: an operand or `-F FILE` sets the host name, `-b` may.
    (&["hostname"], GNU, r"
-a --alias
-A --all-fqdns
-b --boot write
-d --domain
-f --fqdn --long
-F= --file= write read
-i --ip-address
-I --all-ip-addresses
-s --short
-y --yp --nis
-V --version
-h -? --help
"),
    // procps-ng 4.0 `ps`: Unix options after a dash (a value ends the bundle: `-p1`, `-p 1`),
    // GNU long options matched exactly, BSD options in words without a dash (`+x`). The BSD
    // `e` prints every process's environment, which holds other programs' secrets.
    (&["ps"], PS, r"
-A -e
-a
-d
-N --deselect
-C=
-G= --Group=
-g= --group=
-p= --pid=
--ppid=
-q= --quick-pid=
-s= --sid=
-t= --tty=
-u= --user=
-U= --User=
-F
-f
-H
-j
-l
-M
-O=
-o= --format=
-P
-y
-L
-m
-T
-c
-V --version
-w
-x
-Z
--forest
--context
--headers --header --heading --headings
--no-headers --no-header --no-heading --no-headings --noheader --noheaders --noheading --noheadings
--cols= --columns= --width=
--rows= --lines=
--cumulative
--info
--help=?
--sort=
+a
+r
+T
+x
+p=
+q=
+t=
+U=
+f
+j
+l
+Z
+O=
+o=
+s
+u
+v
+X
+H
+m
+c
+e unsafe
+k=
+L
+n
+S
+V
+w
+g
+h
+M
"),
    (&["which"], BUILTIN, r"
-a
-s
"),
    (&["pwd"], BUILTIN, r"
-L
-P
"),
    (&["cd"], BUILTIN, r"
-L
-P
-e
-@
"),
    (&["type"], BUILTIN, r"
-a
-f
-p
-t
-P
"),
    (&["printf"], BUILTIN, r"
-v= unsafe
"),
    (&["true", "false", "expr", "getconf"], BUILTIN, r"
--help
--version
"),
    (&["time"], WRAP, r"
-p
"),
    (&["command"], WRAP, r"
-p
-v nocmd
-V nocmd
"),
    (&["exec"], WRAP, r"
-c
-l
-a=
"),
    (&["builtin"], WRAP, r"
"),
    (&["cat"], GNU, r"
-A --show-all
-b --number-nonblank
-e
-E --show-ends
-n --number
-s --squeeze-blank
-t
-T --show-tabs
-u
-v --show-nonprinting
--help
--version
"),
    (&["tac"], GNU, r"
-b --before
-r --regex
-s= --separator=
--help
--version
"),
    (&["rev"], GNU, r"
-h --help
-V --version
"),
    (&["comm"], GNU, r"
-1
-2
-3
--check-order
--nocheck-order
--output-delimiter=
--total
-z --zero-terminated
--help
--version
"),
    (&["tsort"], GNU, r"
--help
--version
"),
    (&["sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum"], GNU, r"
-b --binary
-c --check
--tag
-t --text
-z --zero
--ignore-missing
--quiet
--status
--strict
-w --warn
--help
--version
"),
    (&["md5sum"], GNU, r"
-b --binary
-c --check
--tag
-t --text
-z --zero
--ignore-missing
--quiet
--status
--strict
-w --warn
--help
--version
"),
    (&["b2sum"], GNU, r"
-b --binary
-c --check
-l= --length=
--tag
-t --text
-z --zero
--ignore-missing
--quiet
--status
--strict
-w --warn
--help
--version
"),
    (&["cksum"], GNU, r"
-a= --algorithm=
-c --check
-l= --length=
--tag
--untagged
-z --zero
--ignore-missing
--quiet
--status
--strict
-w --warn
--debug
--help
--version
"),
    (&["sum"], GNU, r"
-r
-s --sysv
--help
--version
"),
    (&["head"], DIGITS, r"
-c= --bytes=
-n= --lines=
-q --quiet --silent
-v --verbose
-z --zero-terminated
--help
--version
"),
    (&["tail"], DIGITS, r"
-c= --bytes=
-f --follow=?
-F
-n= --lines=
--max-unchanged-stats=
--pid=
-q --quiet --silent
--retry
-s= --sleep-interval=
-v --verbose
-z --zero-terminated
--help
--version
"),
    (&["wc"], GNU, r"
-c --bytes
-m --chars
-l --lines
--files0-from= read
-L --max-line-length
-w --words
--help
--version
"),
    (&["strings"], DIGITS, r"
-a --all
-d --data
-f --print-file-name
-t= --radix=
-w --include-all-whitespace
-o
-T= --target=
-e= --encoding=
--unicode=
-U=
-s= --output-separator=
-h --help
-v -V --version
-n= --bytes=
"),
    (&["hexdump", "hd"], GNU, r"
-b --one-byte-octal
-c --one-byte-char
-C --canonical
-d --two-bytes-decimal
-o --two-bytes-octal
-x --two-bytes-hex
-L --color=?
-e= --format=
-f= --format-file= read
-n= --length=
-s= --skip=
-v --no-squeezing
-h --help
-V --version
"),
    (&["od"], GNU, r"
-A= --address-radix=
--endian=
-j= --skip-bytes=
-N= --read-bytes=
-S= --strings=?
-t= --format=
-v --output-duplicates
-w --width=?
--traditional
--help
--version
-a
-b
-c
-d
-f
-i
-l
-o
-s
-x
"),
    (&["nl"], GNU, r"
-b= --body-numbering=
-d= --section-delimiter=
-f= --footer-numbering=
-h= --header-numbering=
-i= --line-increment=
-l= --join-blank-lines=
-n= --number-format=
-p --no-renumber
-s= --number-separator=
-v= --starting-line-number=
-w= --number-width=
--help
--version
"),
    (&["fold"], DIGITS, r"
-b --bytes
-s --spaces
-w= --width=
--help
--version
"),
    (&["fmt"], DIGITS, r"
-c --crown-margin
-p= --prefix=
-s --split-only
-t --tagged-paragraph
-u --uniform-spacing
-w= --width=
-g= --goal=
--help
--version
"),
    (&["base64"], GNU, r"
-d --decode
-i --ignore-garbage
-w= --wrap=
--help
--version
"),
    (&["base32"], GNU, r"
-d --decode
-i --ignore-garbage
-w= --wrap=
--help
--version
"),
    (&["basenc"], GNU, r"
--base64
--base64url
--base32
--base32hex
--base16
--base2msbf
--base2lsbf
-d --decode
-i --ignore-garbage
-w= --wrap=
--z85
--help
--version
"),
    (&["expand"], DIGITS, r"
-i --initial
-t= --tabs=
--help
--version
"),
    (&["unexpand"], DIGITS, r"
-a --all
--first-only
-t= --tabs=
--help
--version
"),
    (&["cut"], GNU, r"
-b= --bytes=
-c= --characters=
-d= --delimiter=
-f= --fields=
-n
--complement
-s --only-delimited
--output-delimiter=
-z --zero-terminated
--help
--version
"),
    (&["paste"], GNU, r"
-d= --delimiters=
-s --serial
-z --zero-terminated
--help
--version
"),
    (&["column"], GNU, r"
-t --table
-n= --table-name=
-O= --table-order=
-N= --table-columns=
-l= --table-columns-limit=
-E= --table-noextreme=
-d --table-noheadings
-e --table-header-repeat
-H= --table-hide=
-R= --table-right=
-T= --table-truncate=
-W= --table-wrap=
-L --keep-empty-lines
-J --json
-r= --tree=
-i= --tree-id=
-p= --tree-parent=
-c= --output-width=
-o= --output-separator=
-s= --separator=
-x --fillrows
-h --help
-V --version
"),
    (&["cmp"], GNU, r"
-b --print-bytes
-i= --ignore-initial=
-l --verbose
-n= --bytes=
-s --quiet --silent
--help
-v --version
"),
    (&["diff"], DIGITS, r"
--normal
-q --brief
-s --report-identical-files
-c -C= --context=?
-u -U= --unified=?
-e --ed
-n --rcs
-y --side-by-side
-W= --width=
--left-column
--suppress-common-lines
-p --show-c-function
-F= --show-function-line=
--label=
-t --expand-tabs
-T --initial-tab
--tabsize=
--suppress-blank-empty
-l --paginate
-r --recursive recurse
--no-dereference
-N --new-file
--unidirectional-new-file
--ignore-file-name-case
--no-ignore-file-name-case
-x= --exclude=
-X= --exclude-from= read
-S= --starting-file=
--from-file= read
--to-file= read
-i --ignore-case
-E --ignore-tab-expansion
-Z --ignore-trailing-space
-b --ignore-space-change
-w --ignore-all-space
-B --ignore-blank-lines
-I= --ignore-matching-lines=
-a --text
--strip-trailing-cr
-D= --ifdef=
--line-format=
-d --minimal
--horizon-lines=
--speed-large-files
--color=?
--palette=
--help
-v --version
--old-group-format=
--new-group-format=
--unchanged-group-format=
--changed-group-format=
--old-line-format=
--new-line-format=
--unchanged-line-format=
"),
    (&["file"], GNU, r"
--help
-v --version
-m= --magic-file= read
-z --uncompress opaque
-Z --uncompress-noreport opaque
-b --brief
-c --checking-printout
-e= --exclude=
--exclude-quiet=
-f= --files-from= read
-F= --separator=
-i --mime
--mime-encoding
--apple
--extension
--mime-type
-k --keep-going
-l --list
-L --dereference
-h --no-dereference
-n --no-buffer
-N --no-pad
-0 --print0
-p --preserve-date write
-P= --parameter=
-r --raw
-s --special-files
-S --no-sandbox unsafe
-C --compile write
-d --debug
"),
    (&["grep", "egrep", "fgrep"], DIGITS, r"
-E --extended-regexp
-F --fixed-strings
-G --basic-regexp
-P --perl-regexp
-e= --regexp= pattern
-f= --file= pattern read
-i --ignore-case
--no-ignore-case
-w --word-regexp
-x --line-regexp
-z --null-data
-s --no-messages
-v --invert-match
-V --version
--help
-m= --max-count=
-b --byte-offset
-n --line-number
--line-buffered
-H --with-filename
-h --no-filename
--label=
-o --only-matching
-q --quiet --silent
--binary-files=
-a --text
-I
-d= --directories=
-D= --devices=
-r --recursive recurse
-R --dereference-recursive recurse
--include=
--exclude=
--exclude-from= read
--exclude-dir=
-L --files-without-match
-l --files-with-matches
-c --count
-T --initial-tab
-Z --null
-B= --before-context=
-A= --after-context=
-C= --context=
--group-separator=
--no-group-separator
--color=?
--colour=?
-U --binary
"),
    (&["sort"], GNU, r"
-b --ignore-leading-blanks
-d --dictionary-order
-f --ignore-case
-g --general-numeric-sort
-i --ignore-nonprinting
-M --month-sort
-h --human-numeric-sort
-n --numeric-sort
-R --random-sort
--random-source= read
-r --reverse
--sort=
-V --version-sort
--batch-size=
-C
--compress-program= run
--debug
--files0-from= read
-k= --key=
-m --merge
-o= --output= write
-s --stable
-S= --buffer-size=
-t= --field-separator=
-T= --temporary-directory= write
--parallel=
-u --unique
-z --zero-terminated
--help
--version
-c --check=?
"),
    (&["uniq"], DIGITS, r"
-c --count
-d --repeated
-D
--all-repeated=?
-f= --skip-fields=
--group=?
-i --ignore-case
-s= --skip-chars=
-u --unique
-z --zero-terminated
-w= --check-chars=
--help
--version
"),
    (&["stat"], GNU, r"
-L --dereference
-f --file-system
--cached=
--printf=
-t --terse
--help
--version
-c= --format=
"),
    (&["ls"], GNU, r"
-a --all
-A --almost-all
--author
-b --escape
--block-size=
-B --ignore-backups
-c
-C
--color=?
-d --directory
-D --dired
-f
-F --classify=?
--file-type
--format=
--full-time
-g
--group-directories-first
-G --no-group
-h --human-readable
--si
-H --dereference-command-line
--dereference-command-line-symlink-to-dir
--hide=
--hyperlink=?
--indicator-style=
-i --inode
-I= --ignore=
-k --kibibytes
-l
-L --dereference
-m
-n --numeric-uid-gid
-N --literal
-o
-p
-q --hide-control-chars
--show-control-chars
-Q --quote-name
--quoting-style=
-r --reverse
-R --recursive recurse
-s --size
-S
--sort=
--time=
--time-style=
-t
-T= --tabsize=
-u
-U
-v
-w= --width=
-x
-X
-Z --context
--zero
-1
--help
--version
"),
    (&["du"], GNU, r"
-0 --null
-a --all
--apparent-size
-B= --block-size=
-b --bytes
-c --total
-D --dereference-args
-d= --max-depth=
--files0-from= read
-H
-h --human-readable
--inodes
-k
-L --dereference
-l --count-links
-m
-P --no-dereference
-S --separate-dirs
--si
-t= --threshold=
--time=?
--time-style=
-X= --exclude-from= read
--exclude=
-x --one-file-system
--help
--version
-s --summarize
"),
    (&["date"], GNU, r"
-d= --date=
--debug
-f= --file= read
-I --iso-8601=?
--resolution
-R --rfc-email
--rfc-3339=
-r= --reference= read
-s= --set= write
-u --utc --universal
--help
--version
"),
    (&["sleep"], GNU, r"
--help
--version
"),
    (&["whoami"], GNU, r"
--help
--version
"),
    (&["id"], GNU, r"
-a
-Z --context
-g --group
-G --groups
-n --name
-r --real
-u --user
-z --zero
--help
--version
"),
    (&["uname"], GNU, r"
-a --all
-s --kernel-name
-n --nodename
-r --kernel-release
-v --kernel-version
-m --machine
-p --processor
-i --hardware-platform
-o --operating-system
--help
--version
"),
    (&["free"], GNU, r"
-b --bytes
--kilo
--mega
--giga
--tera
--peta
-k --kibi
-m --mebi
-g --gibi
--tebi
--pebi
-h --human
--si
-l --lohi
-t --total
-v --committed
-s= --seconds=
-c= --count=
-w --wide
--help
-V --version
"),
    (&["df"], GNU, r"
-a --all
-B= --block-size=
-h --human-readable
-H --si
-i --inodes
-k
-l --local
--no-sync
--output=?
-P --portability
--sync
--total
-t= --type=
-T --print-type
-x= --exclude-type=
-v
--help
--version
"),
    (&["groups"], GNU, r"
--help
--version
"),
    (&["nproc"], GNU, r"
--all
--ignore=
--help
--version
"),
    (&["seq"], DIGITS, r"
-f= --format=
-s= --separator=
-w --equal-width
--help
--version
"),
    (&["uptime"], GNU, r"
-p --pretty
-h --help
-s --since
-V --version
"),
    (&["basename"], GNU, r"
-a --multiple
-s= --suffix=
-z --zero
--help
--version
"),
    (&["dirname"], GNU, r"
-z --zero
--help
--version
"),
    (&["realpath"], GNU, r"
-e --canonicalize-existing
-m --canonicalize-missing
-L --logical
-P --physical
-q --quiet
--relative-to=
--relative-base=
-s --strip --no-symlinks
-z --zero
--help
--version
"),
    (&["readlink"], GNU, r"
-f --canonicalize
-e --canonicalize-existing
-m --canonicalize-missing
-n --no-newline
-q --quiet
-s --silent
-v --verbose
-z --zero
--help
--version
"),
    (&["numfmt"], GNU, r"
--debug
-d= --delimiter=
--field=
--format=
--from=
--from-unit=
--grouping
--header=?
--invalid=
--padding=
--round=
--suffix=
--to=
--to-unit=
-z --zero-terminated
--help
--version
"),
    (&["tr"], GNU, r"
-c -C --complement
-d --delete
-s --squeeze-repeats
-t --truncate-set1
--help
--version
"),
    (&["pgrep"], GNU, r"
-d= --delimiter=
-l --list-name
-a --list-full
-v --inverse
-w --lightweight
-c --count
-f --full
-g= --pgroup=
-G= --group=
-i --ignore-case
-n --newest
-o --oldest
-O= --older=
-P= --parent=
-s= --session=
-t= --terminal=
-u= --euid=
-U= --uid=
-x --exact
-F= --pidfile= read
-L --logpidfile
-r= --runstates=
-A --ignore-ancestors
--cgroup=
--ns=
--nslist=
-h --help
-V --version
"),
    (&["arch"], GNU, r"
--help
--version
"),
    (&["tty"], GNU, r"
-s --silent --quiet
--help
--version
"),
    (&["logname"], GNU, r"
--help
--version
"),
    (&["users"], GNU, r"
--help
--version
"),
    (&["who"], GNU, r"
-a --all
-b --boot
-d --dead
-H --heading
--ips
-l --login
--lookup
-m
-p --process
-q --count
-r --runlevel
-s --short
-t --time
-T -w --mesg
-u --users
--message
--writable
--help
--version
"),
    (&["locale"], GNU, r"
-a --all-locales
-m --charmaps
-c --category-name
-k --keyword-name
-v --verbose
--help
--usage
-V --version
"),
    (&["env"], WRAP, r"
-i --ignore-environment
-0 --null
-u= --unset=
-C= --chdir=
-S= --split-string= run
--block-signal=?
--default-signal=?
--ignore-signal=?
--list-signal-handling
-v --debug
--help
--version
"),
    (&["nice"], WRAP_DIGITS, r"
-n= --adjustment=
--help
--version
"),
    (&["nohup"], WRAP, r"
--help
--version
"),
    (&["timeout"], WRAP, r"
--preserve-status
--foreground
-k= --kill-after=
-s= --signal=
-v --verbose
--help
--version
"),
    (&["stdbuf"], WRAP, r"
-i= --input=
-o= --output=
-e= --error=
--help
--version
"),
    (&["ionice"], WRAP, r"
-c= --class=
-n= --classdata=
-p= --pid= nocmd
-P= --pgid= nocmd
-t --ignore
-u= --uid= nocmd
-h --help
-V --version
"),
    (&["chrt"], WRAP, r"
-b --batch
-d --deadline
-f --fifo
-i --idle
-o --other
-r --rr
-R --reset-on-fork
-T= --sched-runtime=
-P= --sched-period=
-D= --sched-deadline=
-a --all-tasks
-m --max nocmd
-p --pid nocmd
-v --verbose
-h --help
-V --version
"),
    (&["taskset"], WRAP, r"
-a --all-tasks
-p --pid nocmd
-c --cpu-list
-h --help
-V --version
"),
    (&["setsid"], WRAP, r"
-c --ctty
-f --fork
-w --wait
-h --help
-V --version
"),
    (&["flock"], WRAP, r"
-s --shared
-x --exclusive
-u --unlock
-n --nonblock
-w= --timeout=
-E= --conflict-exit-code=
-o --close
-F --no-fork
--verbose
-h --help
-V --version
-c= --command= run
"),
    (&["xargs"], WRAP, r"
-0 --null
-a= --arg-file= read
-d= --delimiter=
-E=
-e --eof=?
-I=
-i --replace=?
-L= --max-lines=?
-n= --max-args=
-o --open-tty
-P= --max-procs=
-p --interactive
--process-slot-var=
-r --no-run-if-empty
-s= --max-chars=
--show-limits
-t --verbose
-x --exit
--help
--version
-l=?
"),
    (&["su"], GNU, r"
-m -p --preserve-environment
-w= --whitelist-environment=
-g= --group=
-G= --supp-group=
-l --login
-c= --command= run
--session-command= run
-f --fast
-s= --shell= opaque
-P --pty
-h --help
-V --version
"),
    (&["watch"], WRAP, r"
-b --beep
-c --color
-d --differences=?
-e --errexit
-g --chgexit
-q= --equexit=
-n= --interval=
-p --precise
-t --no-title
-w --no-wrap
-x --exec
-h --help
-v --version
"),
    (&["tar"], GNU, r"
-A --catenate --concatenate
-c --create
--delete
-d --diff --compare
-r --append
--test-label
-t --list
-u --update
-x --extract --get
--check-device
-g= --listed-incremental= write
-G --incremental
--hole-detection=
--ignore-failed-read
--level=
--no-check-device
--no-seek
-n --seek
--occurrence=?
--sparse-version=
--sparse
-S
--add-file=
-C= --directory=
--exclude=
--exclude-backups
--exclude-caches
--exclude-caches-all
--exclude-caches-under
--exclude-ignore=
--exclude-ignore-recursive=
--exclude-tag=
--exclude-tag-all=
--exclude-tag-under=
--exclude-vcs
--exclude-vcs-ignores
--no-null
--no-recursion
--no-unquote
--no-verbatim-files-from
--null
--verbatim-files-from
--recursion
-T= --files-from= read
--unquote
-X= --exclude-from= read
--anchored
--ignore-case
--no-anchored
--no-ignore-case
--no-wildcards
--no-wildcards-match-slash
--wildcards
--wildcards-match-slash
--keep-directory-symlink
--keep-newer-files
-k --keep-old-files
--no-overwrite-dir
--one-top-level=?
--overwrite
--overwrite-dir
--recursive-unlink
--remove-files
--skip-old-files
-U --unlink-first
-W --verify
--ignore-command-error
--no-ignore-command-error
-O --to-stdout
--to-command= run
--atime-preserve=?
--clamp-mtime
--delay-directory-restore
--group=
--group-map=
--mode=
--mtime=
-m --touch
--no-delay-directory-restore
--no-same-owner
--no-same-permissions
--numeric-owner
--owner=
--owner-map=
-p --preserve-permissions --same-permissions
--same-owner
--sort=
-s --preserve-order --same-order
--acls
--no-acls
--no-selinux
--no-xattrs
--selinux
--xattrs
--xattrs-exclude=
--xattrs-include=
--force-local
-f= --file=
-F= --info-script= --new-volume-script= run
-L= --tape-length=
-M --multi-volume
--rmt-command= run
--rsh-command= run
--volno-file= write
-b= --blocking-factor=
-B --read-full-records
-i --ignore-zeros
--record-size=
-H= --format=
--old-archive --portability
--pax-option=
--posix
-V= --label=
-a --auto-compress
-I= --use-compress-program= run
-j --bzip2
-J --xz
--lzip
--lzma
--lzop
--no-auto-compress
--zstd
-z --gzip --gunzip --ungzip
-Z --compress --uncompress
--backup=?
--hard-dereference
-h --dereference
-K= --starting-file=
--newer-mtime=
-N= --newer= --after-date=
--one-file-system
-P --absolute-names
--suffix=
--strip-components=
--transform= --xform=
--checkpoint=?
--checkpoint-action= run
--full-time
--index-file= write
-l --check-links
--no-quote-chars=
--quote-chars=
--quoting-style=
-R --block-number
--show-defaults
--show-omitted-dirs
--show-snapshot-field-ranges
--show-transformed-names --show-stored-names
--totals=?
--utc
-v --verbose
--warning=
-w --interactive --confirmation
-o
--help
--restrict
--usage
--version
"),
    (&["rsync"], GNU, r"
--verbose -v
--info=
--debug=
--stderr=
--quiet -q
--no-motd
--checksum -c
--archive -a
--recursive -r
--relative -R
--no-implied-dirs
--backup -b
--backup-dir=
--suffix=
--update -u
--inplace
--append
--append-verify
--dirs -d
--old-dirs --old-d
--mkpath
--links -l
--copy-links -L
--copy-unsafe-links
--safe-links
--munge-links
--copy-dirlinks -k
--keep-dirlinks -K
--hard-links -H
--perms -p
--executability -E
--chmod=
--acls -A
--xattrs -X
--owner -o
--group -g
--devices
--copy-devices
--write-devices
--specials
-D
--times -t
--atimes -U
--open-noatime
--crtimes -N
--omit-dir-times -O
--omit-link-times -J
--super
--fake-super
--sparse -S
--preallocate
--dry-run -n
--whole-file -W
--no-whole-file --no-W
--inc-recursive --i-r
--no-inc-recursive --no-i-r
--ignore-non-existing
--insecure-links
--confine-root=
--compress-threads= --zt=
--checksum-choice=
--one-file-system -x
--block-size= -B=
--rsh= -e= run
--rsync-path= run
--existing
--ignore-existing
--remove-source-files
--del
--delete
--delete-before
--delete-during
--delete-delay
--delete-after
--delete-excluded
--ignore-missing-args
--delete-missing-args
--ignore-errors
--force
--max-delete=
--max-size=
--min-size=
--max-alloc=
--partial
--partial-dir=
--delay-updates
--prune-empty-dirs -m
--numeric-ids
--usermap=
--groupmap=
--chown=
--timeout=
--contimeout=
--ignore-times -I
--size-only
--modify-window=
--temp-dir= -T=
--fuzzy -y
--compare-dest=
--copy-dest=
--link-dest=
--compress -z
--compress-choice=
--compress-level=
--skip-compress=
--cvs-exclude -C
--filter= -f=
-F
--exclude=
--exclude-from=
--include=
--include-from=
--files-from=
--from0 -0
--old-args
--secluded-args -s
--trust-sender
--copy-as=
--address=
--port=
--sockopts=
--blocking-io
--outbuf=
--stats
--8-bit-output -8
--human-readable -h
--progress
-P
--itemize-changes -i
--remote-option= -M=
--out-format=
--log-file=
--log-file-format=
--password-file=
--early-input=
--list-only
--bwlimit=
--stop-after=
--stop-at=
--fsync
--write-batch=
--only-write-batch=
--read-batch=
--protocol=
--iconv=
--checksum-seed=
--ipv4 -4
--ipv6 -6
--version -V
--help
"),
    (&["git status"], GIT, r"
-v --verbose
-s --short
-b --branch
--show-stash
--ahead-behind
--porcelain=?
--long
-z --null
-u=? --untracked-files=?
--ignored=?
--ignore-submodules=?
--column=?
--no-renames
--renames
-M=? --find-renames=?
"),
    (&["git shortlog"], GIT, r"
-c --committer
-n --numbered
-s --summary
-e --email
-w=?
--group=
"),
    (&["git blame"], GIT, r"
--incremental
-b
--root
--show-stats
--progress
--score-debug
-f --show-name
-n --show-number
-p --porcelain
--line-porcelain
-c
-t
-l
-s
-e --show-email
-w
--ignore-rev=
--ignore-revs-file= read
--color-lines
--color-by-age
--minimal
-S= read
--contents= read
-C=?
-M=?
-L=
--abbrev=?
"),
    (&["git ls-files"], GIT, r"
-z
-t
-v
-f
-c --cached
-d --deleted
-m --modified
-o --others
-i --ignored
-s --stage
-k --killed
--directory
--eol
--empty-directory
-u --unmerged
--resolve-undo
-x= --exclude=
-X= --exclude-from= read
--exclude-per-directory=
--exclude-standard
--full-name
--recurse-submodules
--error-unmatch
--with-tree= unsafe
--abbrev=?
--debug
--deduplicate
--sparse
--format=
"),
    (&["git ls-remote"], GIT, r"
-q --quiet
--upload-pack= run
-t --tags
-b --branches
--refs
--get-url
--sort=
--exit-code
--symref
-o= --server-option=
"),
    (&["git ls-tree"], GIT, r"
-d
-r
-t
-z
-l --long
--name-only
--name-status
--object-only
--full-name
--full-tree
--format=
--abbrev=?
"),
    (&["git merge-base"], GIT, r"
-a --all
--octopus
--independent
--is-ancestor
--fork-point
"),
    (&["git describe"], GIT, r"
--contains
--debug
--all
--tags
--long
--first-parent
--abbrev=?
--exact-match
--candidates=
--match=
--exclude=
--always
--dirty=?
--broken=?
"),
    (&["git cat-file"], GIT, r"
-e
-p
-t
-s
--allow-unknown-type
--use-mailmap
--mailmap
--batch=?
--batch-check=?
-Z
--batch-command=?
--batch-all-objects
--buffer
--follow-symlinks
--unordered
--textconv opaque
--filters opaque
--path
"),
    (&["git for-each-ref"], GIT, r"
-s --shell
-p --perl
--python
--tcl
--omit-empty
--count=
--format=
--color=?
--exclude=
--sort=
--points-at=
--merged=
--no-merged=
--contains=
--no-contains=
--ignore-case
--stdin
--include-root-refs
"),
    (&["git grep"], GIT, r"
--cached
--no-index unsafe
--index
--untracked
--exclude-standard
--recurse-submodules
-v --invert-match
-i --ignore-case
-w --word-regexp
-a --text
-I
--textconv opaque
-r --recursive
--max-depth=
-E --extended-regexp
-G --basic-regexp
-F --fixed-strings
-P --perl-regexp
-n --line-number
--column
-h
-H
--full-name
-l --files-with-matches
--name-only
-L --files-without-match
-z --null
-o --only-matching
-c --count
--color=?
--break
--heading
-C= --context=
-B= --before-context=
-A= --after-context=
--threads=
-N=
-p --show-function
-W --function-context
-f= pattern read
-e= pattern
--and
--or
--not
-q --quiet
--all-match
-O=? --open-files-in-pager=? run
--ext-grep unsafe
-m= --max-count=
"),
    (&["git count-objects"], GIT, r"
-v --verbose
-H --human-readable
"),
    (&["git name-rev"], GIT, r"
--name-only
--tags
--refs=
--exclude=
--all
--annotate-stdin
--undefined
--always
"),
    (&["git check-ignore"], GIT, r"
-q --quiet
-v --verbose
--stdin
-z
-n --non-matching
--no-index
--index
"),
    (&["git branch"], GIT, r"
-v --verbose
-q --quiet
-t=? --track=? write
-u= --set-upstream-to= write
--unset-upstream write
--color=?
-r --remotes
--contains=
--no-contains=
--abbrev=?
-a --all
-d --delete write
-D write
-m --move write
-M write
--omit-empty
-c --copy write
-C write
-l --list
--show-current
--create-reflog write
--edit-description write
-f --force write
--merged=
--no-merged=
--column=?
--sort=
--points-at=
-i --ignore-case
--recurse-submodules unsafe
--format=
"),
    (&["git tag"], GIT, r"
-l --list
-n=?
-d --delete write
-v --verify opaque
-a --annotate write
-m= --message= write
-F= --file= write
--trailer= write
-e --edit write
-s --sign write
--cleanup= write
-u= --local-user= write
-f --force write
--create-reflog write
--column=?
--contains=
--no-contains=
--merged=
--no-merged=
--omit-empty
--sort=
--points-at=
--format=
--color=?
-i --ignore-case
"),
    (&["git remote"], GIT, r"
-v --verbose
"),
];

/// Each table, parsed on first use: a command pays only for the programs it names (parsing
/// all of them cost about a millisecond, on every one-shot call, even for `:`).
static PARSED: [OnceLock<Option<Table>>; TABLES.len()] = [const { OnceLock::new() }; TABLES.len()];

/// Parses the `i`th table.
fn parse(i: usize) -> Result<Table, TableError> {
    let (names, style, text) = TABLES[i];
    Table::parse(text, style)
        .map_err(|e| TableError(format!("the table of {}: {}", names.join(", "), e.0)))
}

/// The table of a program (`ls`) or git subcommand (`git log`), if it has one. A table that
/// does not parse (a bug, found by the tests) is no table: nothing it covers is read-only.
pub fn table(name: &str) -> Option<&'static Table> {
    let i = TABLES
        .iter()
        .position(|(names, ..)| names.contains(&name))?;
    PARSED[i].get_or_init(|| parse(i).ok()).as_ref()
}

/// Every program and git subcommand that has a table.
pub fn programs() -> Vec<&'static str> {
    TABLES
        .iter()
        .flat_map(|(names, ..)| names.iter().copied())
        .collect()
}

/// Whether every table parses (a table that does not is a bug, found by the tests; until
/// then the programs it covers have no table and nothing they do is read-only).
pub fn check() -> Result<(), TableError> {
    (0..TABLES.len()).try_for_each(|i| parse(i).map(drop))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_parses() {
        if let Err(e) = check() {
            panic!("{}", e.0);
        }
        assert!(table("ls").is_some());
        assert!(table("git log").is_some());
        assert!(table("git frobnicate").is_none());
    }
}
