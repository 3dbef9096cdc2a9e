"""Option models of the plain read-only programs (coreutils, grep, rg, ...).

Each entry lists the options we accept; an option not listed makes the command
not read-only. Options that write or execute are listed as ``forbidden`` so the
reason names them.
"""

from __future__ import annotations

from typing import Final

from .spec import ParsedArgs, ProgramSpec, longs

__all__ = ["SIMPLE_SPECS", "check_lsof", "check_ps", "check_xxd"]


def _date_check(parsed: ParsedArgs) -> list[str]:
    bad = [p for p in parsed.positionals if not p.startswith("+")]
    return ["date: an operand that is not +FORMAT sets the clock"] if bad else []


def _no_operands(parsed: ParsedArgs) -> list[str]:
    return [f"operand(s) {parsed.positionals} change state"] if parsed.positionals else []


def _printf_check(parsed: ParsedArgs) -> list[str]:
    return []


def _history_check(parsed: ParsedArgs) -> list[str]:
    if parsed.options or any(not p.isdigit() for p in parsed.positionals):
        return ["history: only `history [N]` is read-only"]
    return []


def _command_check(parsed: ParsedArgs) -> list[str]:
    if not parsed.has("-v", "-V"):
        return ["command: runs its argument (wrapper), only -v/-V lookups are read-only"]
    return []


def _man_check(parsed: ParsedArgs) -> list[str]:
    if any("/" in p for p in parsed.positionals):
        return ["man with a path formats an arbitrary file (groff input is not modelled)"]
    return []


#: procps options whose value follows (attached or as the next word): UNIX ``-o FMT`` and BSD ``o FMT``.
_PS_VALUED_DASH: Final = frozenset("CGgpqstUuoOk")
_PS_VALUED_BSD: Final = frozenset("oOpqtUk")
_PS_VALUED_LONG: Final = frozenset(
    {"--format", "--pid", "--ppid", "--sid", "--tty", "--user", "--User", "--group", "--Group", "--sort", "--cols",
     "--columns", "--lines", "--rows", "--width", "--quick-pid"}
)


def check_ps(args: list[str]) -> list[str]:
    """procps ``ps``: any listing but the environment of processes (BSD ``e``, the ``environ``
    format), which holds other programs' secrets (the agent's own API keys) and names no path."""
    if any("environ" in arg.lower() for arg in args):
        return ["ps environ: prints the environment of processes (other programs' secrets)"]
    value_next = False
    for arg in args:
        if value_next:
            value_next = False
            continue
        if arg[:2] == "--":
            value_next = arg in _PS_VALUED_LONG  # `--pid=1` carries its value
            continue
        dash = arg[:1] == "-"
        if not dash and not (arg.isascii() and arg.isalnum()):
            continue  # no BSD option list (`ps /x` fails): procps reads only letters and numbers there
        valued = _PS_VALUED_DASH if dash else _PS_VALUED_BSD
        for index, letter in enumerate(arg[1:] if dash else arg):
            if letter in valued:
                value_next = index == len(arg) - (2 if dash else 1)  # the value is the next word
                break
            if letter == "e" and not dash:
                return ["ps e: prints the environment of processes (other programs' secrets)"]
    return []


def check_lsof(args: list[str]) -> list[str]:
    """``lsof -i @HOST`` resolves HOST in DNS: a query with any label the command chooses leaves
    the machine (a channel out for what the model read), so a host name is not read-only."""
    if any("@" in arg for arg in args):
        return ["lsof -i @HOST: looks the host name up in DNS (a network query the command chooses)"]
    return []


_XXD_FLAGS: Final = frozenset(["-a", "-autoskip", "-b", "-bits", "-C", "-capitalize", "-E", "-EBCDIC", "-e", "-h", "-help", "-i", "-include", "-p", "-ps", "-postscript", "-plain", "-u", "-v", "-version", "-d"])
_XXD_VALUES: Final = ("-c", "-cols", "-g", "-groupsize", "-l", "-len", "-o", "-offset", "-s", "-seek", "-n", "-name")


def check_xxd(args: list[str]) -> list[str]:
    """xxd takes single-dash long options (``-ps``) and never bundles; a 2nd operand is written."""
    positionals: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "-" or not arg.startswith("-") or positionals:
            positionals.append(arg)
        elif arg in _XXD_FLAGS:
            continue
        elif arg in _XXD_VALUES:
            i += 1
        elif any(arg.startswith(v) and arg[len(v):].lstrip("+-").replace("x", "").isalnum()
                 for v in ("-c", "-g", "-l", "-o", "-s", "-n")):
            continue
        elif arg.startswith("-r"):
            return ["xxd -r: reverts a dump into a binary (writes)"]
        else:
            return [f"xxd: unknown option {arg}"]
    if len(positionals) > 1:
        return ["xxd: a second operand is an output file"]
    return []


_GREP_LONG: Final = longs(
    "extended-regexp fixed-strings basic-regexp perl-regexp regexp= file= ignore-case no-ignore-case "
    "word-regexp line-regexp null-data no-messages invert-match version help max-count= byte-offset "
    "line-number no-line-number line-buffered with-filename no-filename label= only-matching quiet silent "
    "binary-files= text devices= directories= exclude= exclude-from= exclude-dir= include= "
    "files-with-matches files-without-match count initial-tab null before-context= after-context= "
    "context= color=? colour=? recursive dereference-recursive binary unix-byte-offsets"
)
_GREP: Final = dict(short="EFGPiyvwxcLloqsbHhnTZzaIrRUV", short_arg="efmABCDd", long=_GREP_LONG, numeric=True,
             glob_safe=True)

_RG_LONG: Final = longs(
    "after-context= before-context= context= case-sensitive color= colors= column no-column count "
    "count-matches files files-with-matches files-without-match fixed-strings follow glob= iglob= hidden "
    "no-hidden ignore-case invert-match json no-json line-number no-line-number max-count= max-depth= "
    "maxdepth= max-filesize= multiline multiline-dotall no-heading heading no-ignore no-ignore-vcs "
    "no-ignore-dot no-ignore-global no-ignore-parent no-ignore-exclude no-ignore-files no-messages "
    "only-matching passthru passthrough pretty quiet regexp= replace= smart-case sort= sortr= stats text "
    "threads= type= type-not= type-list type-add= unrestricted vimgrep word-regexp line-regexp "
    "with-filename no-filename trim no-trim null null-data encoding= engine= pcre2 no-pcre2 auto-hybrid-regex "
    "binary no-binary no-config glob-case-insensitive max-columns= max-columns-preview byte-offset crlf "
    "debug trace dfa-size-limit= regex-size-limit= field-match-separator= field-context-separator= "
    "context-separator= no-context-separator path-separator= ignore-file= ignore-file-case-insensitive "
    "one-file-system no-unicode unicode invert-match line-buffered block-buffered mmap no-mmap "
    "include-zero files-without-match help version pre= pre-glob= hostname-bin= search-zip no-search-zip "
    "hyperlink-format= no-follow no-require-git fixed-strings ignore-case no-line-number"
)
_RG: Final = ProgramSpec(
    "rg", short="abBcFhHiIlLnNoOpPqsSuUvVwxz0.", short_arg="ABCeEfgjmMrtTd", long=_RG_LONG, numeric=False,
    forbidden={"--pre": "runs a preprocessor program", "--pre-glob": "only used with --pre",
               "--hostname-bin": "runs a program", "--search-zip": "runs decompression programs",
               "-z": "runs decompression programs"},
)

_LS_LONG: Final = longs(
    "all almost-all author escape block-size= ignore-backups color=? directory dired classify=? file-type "
    "format= full-time group-directories-first no-group human-readable si dereference-command-line "
    "dereference-command-line-symlink-to-dir hide= hyperlink=? indicator-style= inode ignore= kibibytes "
    "dereference numeric-uid-gid literal hide-control-chars show-control-chars quote-name quoting-style= "
    "reverse recursive size sort= time= time-style= tabsize= width= context zero help version"
)

_SORT_LONG: Final = longs(
    "ignore-leading-blanks dictionary-order ignore-case general-numeric-sort ignore-nonprinting month-sort "
    "human-numeric-sort numeric-sort random-sort random-source= reverse sort= version-sort batch-size= "
    "check=? debug files0-from= key= merge parallel= stable buffer-size= field-separator= "
    "temporary-directory= unique zero-terminated output= compress-program= help version"
)

_DIFF_LONG: Final = longs(
    "brief normal unified=? context=? recursive new-file unidirectional-new-file ignore-case ignore-all-space "
    "ignore-space-change ignore-blank-lines ignore-trailing-space ignore-tab-expansion ignore-matching-lines= "
    "text report-identical-files side-by-side color=? palette= exclude= exclude-from= label= strip-trailing-cr "
    "suppress-common-lines no-dereference expand-tabs initial-tab minimal speed-large-files width= "
    "show-c-function show-function-line= starting-file= from-file= to-file= ignore-file-name-case "
    "no-ignore-file-name-case left-column suppress-blank-empty tabsize= line-format= "
    "old-line-format= new-line-format= unchanged-line-format= old-group-format= new-group-format= "
    "unchanged-group-format= changed-group-format= horizon-lines= help version"
)

_FD: Final = ProgramSpec(
    "fd", short="HIusiFaLp0q1hVg", short_arg="dEtecSjo", long=longs(
        "hidden no-hidden no-ignore ignore unrestricted no-ignore-vcs ignore-vcs no-ignore-parent no-require-git "
        "require-git case-sensitive ignore-case glob regex fixed-strings and= absolute-path relative-path "
        "follow no-follow full-path print0 max-depth= min-depth= exact-depth= exclude= prune type= extension= "
        "size= changed-within= changed-after= changed-before= newer= older= owner= format= color= threads= "
        "max-results= quiet show-errors base-directory= path-separator= search-path= strip-cwd-prefix=? "
        "one-file-system ignore-file= hyperlink=? ignore-contain= max-buffer-time= batch-size= help version "
        "list-details exec= exec-batch="),
    forbidden={"-x": "runs a command for each result", "--exec": "runs a command for each result",
               "-X": "runs a command with the results", "--exec-batch": "runs a command with the results",
               "-l": "runs ls on the results", "--list-details": "runs ls on the results",
               "--batch-size": "only used with --exec-batch"},
    glob_safe=False,
)

_SUM: Final = ProgramSpec("sum", short="bctwz", long=longs(
    "binary check tag text zero ignore-missing quiet status strict warn help version"), glob_safe=True)

_SPECS: Final[list[ProgramSpec]] = [
    ProgramSpec("ls", short="aAbBcCdDfFgGhHiklLmnNopqQrRsStuUvxXZ1", short_arg="IwT", long=_LS_LONG,
                glob_safe=True),
    ProgramSpec("cat", short="AbeEnstTuv", long=longs(
        "show-all number-nonblank show-ends number squeeze-blank show-tabs show-nonprinting help version"),
                glob_safe=True),
    ProgramSpec("head", short="qvz", short_arg="cn", numeric=True, glob_safe=True,
                long=longs("bytes= lines= quiet silent verbose zero-terminated help version")),
    ProgramSpec("tail", short="fFqvzr", short_arg="cns", numeric=True, glob_safe=True, long=longs(
        "bytes= follow=? lines= max-unchanged-stats= pid= quiet retry silent sleep-interval= verbose "
        "zero-terminated help version")),
    ProgramSpec("wc", short="clmwL", glob_safe=True, long=longs(
        "bytes chars lines words max-line-length files0-from= total= help version")),
    ProgramSpec("grep", **_GREP),  # type: ignore[arg-type]
    ProgramSpec("egrep", **_GREP),  # type: ignore[arg-type]
    ProgramSpec("fgrep", **_GREP),  # type: ignore[arg-type]
    _RG,
    ProgramSpec("file", short="bcdEhiIkLlNnprsSvz0", short_arg="eFfmP", long=longs(
        "brief checking-printout exclude= exclude-quiet= extension files-from= separator= mime mime-type "
        "mime-encoding keep-going list dereference no-dereference magic-file= no-pad no-buffer "
        "preserve-date raw special-files uncompress uncompress-noreport print0 help version apple"),
                forbidden={"-C": "compiles a magic file (writes)", "--compile": "writes a magic file",
                           "-p": "sets each file's times back (a write: mtime loses its nanoseconds, ctime moves)",
                           "--preserve-date": "sets each file's times back (a write: mtime loses its nanoseconds, "
                                              "ctime moves)",
                           "-z": "runs decompression programs found on PATH",
                           "--uncompress": "runs decompression programs found on PATH",
                           "--uncompress-noreport": "runs decompression programs found on PATH"}),
    ProgramSpec("stat", short="LftZ", short_arg="c", glob_safe=True, long=longs(
        "dereference file-system format= printf= terse cached= help version")),
    ProgramSpec("du", short="0abcDhHklLmPSsx", short_arg="BdtX", glob_safe=True, long=longs(
        "all apparent-size block-size= bytes total dereference-args dereference max-depth= human-readable "
        "inodes si summarize threshold= time=? time-style= exclude= exclude-from= one-file-system count-links "
        "null files0-from= no-dereference separate-dirs help version")),
    ProgramSpec("df", short="ahHiklPTv", short_arg="BtxF", glob_safe=True, long=longs(
        "all block-size= human-readable si inodes local no-sync sync output=? portability print-type type= "
        "exclude-type= total help version")),
    ProgramSpec("pwd", short="LP"),
    ProgramSpec("echo", free_form=True, data_args=True),
    ProgramSpec("printf", free_form=True, data_args=True, posix_order=True,
                forbidden={"-v": "assigns the output to a shell variable"}, check=_printf_check),
    ProgramSpec("which", short="as", long=longs("all skip-alias skip-functions read-alias help version")),
    ProgramSpec("type", short="afptP"),
    ProgramSpec("whoami", long=longs("help version")),
    ProgramSpec("id", short="agGnruzZ", long=longs("context group groups name real user zero help version")),
    ProgramSpec("groups"),
    ProgramSpec("uname", short="asnrvmpio", long=longs(
        "all kernel-name nodename kernel-release kernel-version machine processor hardware-platform "
        "operating-system help version")),
    ProgramSpec("date", short="uRI", short_arg="dfr", long=longs(
        "date= file= iso-8601=? rfc-email rfc-3339= reference= utc universal debug help version resolution "
        "set="), forbidden={"-s": "sets the system clock", "--set": "sets the system clock"}, check=_date_check),
    ProgramSpec("hostname", short="fsiIdAa", long=longs(
        "fqdn short ip-address all-ip-addresses domain all-fqdns alias help version"), check=_no_operands),
    ProgramSpec("printenv", short="0", long=longs("null help version")),
    ProgramSpec("tree", short="adlfxpsughDFqNQtvUcCnAS", short_arg="LPITo", long=longs(
        "noreport charset= dirsfirst du prune gitignore info sort= timefmt= matchdirs ignore-case filelimit= "
        "help version inodes device si"),
                forbidden={"-o": "writes its output to a file", "-R": "with -H writes 00Tree.html files",
                           "-H": "HTML output (with -R writes files)", "--fromfile": "reads a listing"}),
    ProgramSpec("sort", short="bcCdfghiMmnRrsuVz", short_arg="kStTo", long=_SORT_LONG, forbidden={
        "-o": "writes the output to a file", "--output": "writes the output to a file",
        "--compress-program": "runs a program", "-T": "writes temporary files to a directory",
        "--temporary-directory": "writes temporary files to a directory"}),
    ProgramSpec("uniq", short="cdDiuz", short_arg="fsw", max_positional=1, long=longs(
        "count repeated all-repeated=? skip-fields= skip-chars= check-chars= ignore-case unique "
        "zero-terminated group=? help version")),
    ProgramSpec("cut", short="nsz", short_arg="bcdf", glob_safe=True, long=longs(
        "bytes= characters= delimiter= fields= complement only-delimited output-delimiter= zero-terminated "
        "help version")),
    ProgramSpec("tr", short="cCdst", max_positional=2, long=longs(
        "complement delete squeeze-repeats truncate-set1 help version")),
    # Not glob_safe: a file named ``--from-file=.env`` makes ``diff *`` print .env (no word names it).
    ProgramSpec("diff", short="abBcdeEfiItlNnpPqrsTuwyZ", short_arg="CDFSIUWxXL", long=_DIFF_LONG, numeric=True,
                forbidden={"-l": "runs pr on its output", "--paginate": "runs pr on its output"}),
    ProgramSpec("cmp", short="blsv", short_arg="in", long=longs(
        "print-bytes ignore-initial= verbose bytes= silent quiet help version")),
    ProgramSpec("comm", short="123z", long=longs(
        "check-order nocheck-order output-delimiter= total zero-terminated help version")),
    ProgramSpec("nl", short="p", short_arg="bdfhilnsvw", long=longs(
        "body-numbering= section-delimiter= footer-numbering= header-numbering= line-increment= "
        "join-blank-lines= number-format= no-renumber number-separator= starting-line-number= "
        "number-width= help version")),
    # -w[BYTES]: an optional value, attached only (``od -w FILE`` reads FILE).
    ProgramSpec("od", short="bcdDfhHiIlLoOsvxX", short_arg="AjNSt", short_opt="w", long=longs(
        "address-radix= endian= skip-bytes= read-bytes= format= output-duplicates strings=? width=? traditional "
        "help version")),
    ProgramSpec("xxd", short="aCEeipsuvb", short_arg="cglos", max_positional=1, long=longs(
        "autoskip capitalize ebcdic help include postscript plain bits uppercase version"),
                forbidden={"-r": "reverts a dump into a binary (writes)", "-R": "colour mode (not modelled)"}),
    # Not glob_safe: a file named ``-f.env`` makes ``hexdump *`` print .env in its format error.
    ProgramSpec("hexdump", short="bcCdovx", short_arg="nsef"),
    ProgramSpec("base64", short="di", short_arg="w", max_positional=1, long=longs(
        "decode ignore-garbage wrap= help version")),
    ProgramSpec("base32", short="di", short_arg="w", max_positional=1, long=longs(
        "decode ignore-garbage wrap= help version")),
    ProgramSpec("realpath", short="eLmPqsz", long=longs(
        "relative-to= relative-base= canonicalize-existing canonicalize-missing logical physical quiet strip "
        "no-symlinks zero help version")),
    ProgramSpec("readlink", short="femnqsvz", long=longs(
        "canonicalize canonicalize-existing canonicalize-missing no-newline quiet silent verbose zero "
        "help version")),
    ProgramSpec("dirname", short="z", long=longs("zero help version")),
    ProgramSpec("basename", short="az", short_arg="s", long=longs("multiple suffix= zero help version")),
    ProgramSpec("column", short="tnexJLd", short_arg="scoNRHWlOEr", long=longs(
        "table separator= output-separator= columns= fillrows json table-columns= table-name= "
        "keep-empty-lines help version")),
    ProgramSpec("jq", short="nrjacsCMSeEh", short_arg="fL", glob_safe=True, whole_long=True, long=longs(
        "null-input raw-input slurp compact-output raw-output join-output ascii-output sort-keys color-output "
        "monochrome-output tab indent= unbuffered stream stream-errors seq exit-status arg=2 argjson=2 "
        "slurpfile=2 rawfile=2 args jsonargs from-file= raw-output0 help version")),
    ProgramSpec("true", free_form=True),
    ProgramSpec("false", free_form=True),
    ProgramSpec(":", free_form=True),
    ProgramSpec("sleep", long=longs("help version")),
    ProgramSpec("seq", short="w", short_arg="fs", long=longs(
        "format= separator= equal-width help version")),
    ProgramSpec("yes", long=longs("help version")),
    ProgramSpec("man", short="afkwWhV", short_arg="SMLm", long=longs(
        "all whatis apropos where path where-cat location sections= manpath= locale= help version "
        "pager= html=? browser= prompt="),
                forbidden={"-P": "runs a pager program", "--pager": "runs a pager program",
                           "-H": "runs a browser", "--html": "runs a browser", "-B": "runs a browser",
                           "--browser": "runs a browser", "-l": "formats an arbitrary file (not modelled)",
                           "-X": "runs an X viewer", "-t": "runs groff", "-T": "not modelled",
                           "-p": "preprocessors",
                           "-M": "a manual path of the command's choosing (a page there prints any file with .so)",
                           "--manpath": "a manual path of the command's choosing (a page there prints any file with .so)",
                           "-m": "another system's pages: its name is appended to every manual directory, so `..` "
                                 "reaches a tree of the command's choosing (a page there prints any file with .so)"},
                check=_man_check),
    ProgramSpec("help", short="dms"),
    ProgramSpec("history", check=_history_check),
    ProgramSpec("command", short="pvV", check=_command_check),
    ProgramSpec("md5sum", short=_SUM.short, long=_SUM.long, glob_safe=True),
    ProgramSpec("sha1sum", short=_SUM.short, long=_SUM.long, glob_safe=True),
    ProgramSpec("sha224sum", short=_SUM.short, long=_SUM.long, glob_safe=True),
    ProgramSpec("sha256sum", short=_SUM.short, long=_SUM.long, glob_safe=True),
    ProgramSpec("sha384sum", short=_SUM.short, long=_SUM.long, glob_safe=True),
    ProgramSpec("sha512sum", short=_SUM.short, long=_SUM.long, glob_safe=True),
    ProgramSpec("b2sum", short=_SUM.short, long=_SUM.long, glob_safe=True),
    # coreutils 9: -a TYPE and -l BITS take values; -c reads a list of files to check.
    ProgramSpec("cksum", short="czw", short_arg="al", long=longs(
        "algorithm= base64 check length= raw tag untagged zero ignore-missing quiet status strict warn debug "
        "help version")),
    ProgramSpec("tac", short="brs", long=longs("before regex separator= help version"), glob_safe=True),
    ProgramSpec("rev"),
    ProgramSpec("fold", short="bs", short_arg="w", long=longs("bytes spaces width= help version")),
    ProgramSpec("expand", short="i", short_arg="t", long=longs("initial tabs= help version")),
    ProgramSpec("strings", short="afw", short_arg="nte", numeric=True, long=longs(
        "all print-file-name bytes= radix= encoding= help version")),
    ProgramSpec("paste", short="sz", short_arg="d", long=longs("serial delimiters= zero-terminated help version")),
    ProgramSpec("join", short="iz", short_arg="aevot12j", long=longs(
        "ignore-case check-order nocheck-order header zero-terminated help version")),
    ProgramSpec("locale", short="ack", long=longs("all-locales charmaps category-name keyword-name verbose")),
    ProgramSpec("tty", short="s", long=longs("silent quiet help version")),
    ProgramSpec("arch"),
    ProgramSpec("nproc", long=longs("all ignore= help version")),
    ProgramSpec("uptime", short="psV", long=longs("pretty since help version")),
    ProgramSpec("free", short="bkmgthlwsc", numeric=False, long=longs(
        "bytes kilo mega giga tera peta kibi mebi gibi tebi pebi human wide total lohi seconds= count= si "
        "help version")),
    ProgramSpec("ps", free_form=True),
    # procps-ng: -F FILE (--pidfile), -O SECONDS, -r STATES take values; -L is a flag.
    ProgramSpec("pgrep", short="lafvwxcinoAL", short_arg="dgGPstuUFOr", long=longs(
        "delimiter= list-name list-full inverse lightweight count full pgroup= group= ignore-case newest "
        "oldest older= parent= session= terminal= euid= uid= exact pidfile= logpidfile ns= nslist= "
        "runstates= help version")),
    ProgramSpec("who", short="abdHlmpqrstTuw", long=longs("all boot heading login count runlevel short time users")),
    ProgramSpec("w", short="hsuif", long=longs("no-header short ip-addr from no-current help version")),
    ProgramSpec("users"),
    ProgramSpec("getconf", short="a"),
    ProgramSpec("lsof", free_form=True),
    ProgramSpec("test", free_form=True),
    ProgramSpec("env", check=_no_operands),
    ProgramSpec("cd", short="LPe@"),
    ProgramSpec("pushd", short="n"),
    ProgramSpec("popd", short="n"),
    ProgramSpec("dirs", short="clpv"),
    ProgramSpec("wait"),
    _FD,
    ProgramSpec("fdfind", short=_FD.short, short_arg=_FD.short_arg, long=_FD.long, forbidden=_FD.forbidden),
    ProgramSpec("numfmt", short="z", short_arg="d", long=longs(
        "debug delimiter= field= format= from= from-unit= grouping header=? invalid= padding= round= suffix= to= "
        "to-unit= zero-terminated help version")),
    # expr has no options besides --help/--version and never writes or runs anything.
    ProgramSpec("expr", free_form=True),
    # util-linux cal and bsdmainutils ncal: every option only changes the layout.
    ProgramSpec("cal", short="13yYjJmMSvwhbCeopV", short_arg="nABdH", short_opt="s", long=longs(
        "one three months= sunday monday julian span year twelve week=? color=? vertical reform= iso help "
        "version")),
    ProgramSpec("ncal", short="13yYjJmMSvwhbCeopV", short_arg="nABdH", short_opt="s"),
    ProgramSpec("fmt", short="cstu", short_arg="pgw", numeric=True, long=longs(
        "crown-margin prefix= split-only tagged-paragraph uniform-spacing width= goal= help version")),
]

SIMPLE_SPECS: Final[dict[str, ProgramSpec]] = {spec.name: spec for spec in _SPECS}
