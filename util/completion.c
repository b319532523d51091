/*
 * The completion scripts. bash's is the reference: a fixed function whose
 * per-command parts (the flags, which take a value, what the value is) are
 * written here from the table as `case` branches. zsh runs that same
 * function through its bashcompinit, as Terraform's completion does; fish
 * gets its own `complete` lines. Names are checked to hold only letters,
 * digits and '-', so nothing from the table needs quoting in a script.
 */
#include "util/completion.h"

#include <string.h>

#include "util/buf.h"
#include "util/err.h"
#include "util/banned.h"

static int word_ok(const char *s)
{
	if (!s || !*s)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '-'))
			return 0;
	return 1;
}

static int words_ok(const char *const *w)
{
	for (; w && *w; w++)
		if (!word_ok(*w))
			return 0;
	return 1;
}

static int table_ok(const struct completion_cmd *cmds, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!word_ok(cmds[i].name) || (cmds[i].alias && !word_ok(cmds[i].alias)) ||
		    !words_ok(cmds[i].subcommands))
			return 0;
		for (size_t k = 0; k < cmds[i].nflags; k++)
			if (!word_ok(cmds[i].flags[k].name) || !words_ok(cmds[i].flags[k].values))
				return 0;
	}
	return 1;
}

/* "a b c" from a NULL-terminated list, with prefix before each word. */
static int add_words(struct vx_buf *b, const char *prefix, const char *const *w)
{
	int rc = 0;

	for (size_t i = 0; w && w[i] && rc == 0; i++)
		rc = vx_buf_printf(b, "%s%s%s", i ? " " : "", prefix, w[i]);
	return rc;
}

/* Every flag of c, dash first, and the two every command has. */
static int add_flags(struct vx_buf *b, const struct completion_cmd *c)
{
	int rc = 0;

	for (size_t k = 0; k < c->nflags && rc == 0; k++)
		rc = vx_buf_printf(b, "-%s ", c->flags[k].name);
	return rc ? rc : vx_buf_adds(b, "-help -debug");
}

static const char bash_head[] =
	"_complete() {\n"
	"\tlocal cur=${COMP_WORDS[COMP_CWORD]} prog=${COMP_WORDS[0]} cmd= first=1 flag= eq=0 pre=\n"
	"\tlocal dir= npos=0 what= words= flags= valued= dirs= subs= i w f cc strip\n"
	"\tlocal -a cw\n"
	"\tCOMPREPLY=()\n"
	"\tcase ${prog##*/} in\n";

/* After the aliases: the command's name, the flag being given a value. */
static const char bash_middle[] =
	"\t[[ $prog == '~/'* ]] && prog=$HOME/${prog#'~/'}\n"
	"\t# bash splits words at \"=\" (it is in COMP_WORDBREAKS): \"-f=v\" comes as \"-f\" \"=\"\n"
	"\t# \"v\", a sweep run's address job.lr[seed=1] as \"job.lr[seed\" \"=\" \"1]\". Join them\n"
	"\t# back into cw (cc: the word being typed), as bash-completion's\n"
	"\t# _get_comp_words_by_ref -n = does, without needing that package. bash\n"
	"\t# replaces only the text after the last \"=\": strip is what is before it.\n"
	"\tcw=(\"${COMP_WORDS[@]:0:$first}\")\n"
	"\tfor ((i = first; i <= COMP_CWORD; i++)); do\n"
	"\t\tw=${COMP_WORDS[i]}\n"
	"\t\tif ((i > first)) && [[ $w == = || ${COMP_WORDS[i-1]} == = ]]; then\n"
	"\t\t\tcw[${#cw[@]}-1]+=$w\n"
	"\t\telse\n"
	"\t\t\tcw+=(\"$w\")\n"
	"\t\tfi\n"
	"\tdone\n"
	"\tcc=$((${#cw[@]} - 1)) cur=${cw[cc]} w=${COMP_WORDS[COMP_CWORD]}\n"
	"\t[[ $w == = ]] && w=\n"
	"\tstrip=${cur:0:${#cur}-${#w}}\n"
	"\t# The flag whose value is being typed: \"-f v\" or \"-f=v\".\n"
	"\tif [[ $cur == -*=* ]]; then\n"
	"\t\tflag=${cur%%=*} pre=${cur%%=*}= cur=${cur#*=} eq=1\n"
	"\telif ((cc > first)); then\n"
	"\t\tflag=${cw[cc-1]}\n"
	"\tfi\n"
	"\t[[ $flag == -* ]] || flag=\n"
	"\tflag=${flag#-} && flag=${flag#-}\n"
	"\tcase $cmd in\n";

/* After each command's flags that take a value: the stack directory so far, then the value. */
static const char bash_walk[] =
	"\t# The stack directory given so far (a -C flag's or a directory argument),\n"
	"\t# and how many arguments there are before this word.\n"
	"\tfor ((i = first; i < cc; i++)); do\n"
	"\t\tw=${cw[i]} f=${cw[i]#-} && f=${f#-} && f=${f%%=*}\n"
	"\t\tif [[ $w != -* ]]; then\n"
	"\t\t\t((npos++))\n"
	"\t\t\t[[ -d $w ]] && dir=$w\n"
	"\t\telif [[ $w == *=* ]]; then\n"
	"\t\t\t[[ $dirs == *\" $f \"* ]] && dir=${w#*=}\n"
	"\t\telif [[ $valued == *\" $f \"* ]]; then\n"
	"\t\t\t[[ $dirs == *\" $f \"* ]] && dir=${cw[i+1]}\n"
	"\t\t\t((i++))\n"
	"\t\tfi\n"
	"\tdone\n"
	"\tcase $cmd:$flag:$eq in\n";

static const char bash_tail[] =
	"\tesac\n"
	"\tcase $what in\n"
	"\twords) ;;\n"
	"\taddresses) words=$(\"$prog\" __complete addresses ${dir:+\"$dir\"} 2>/dev/null) ;;\n"
	"\tdir)\n"
	"\t\tcompopt -o filenames 2>/dev/null\n"
	"\t\twhile IFS= read -r w; do w=$pre$w && COMPREPLY+=(\"${w:${#strip}}\"); done < <(compgen -d -- \"$cur\")\n"
	"\t\treturn ;;\n"
	"\tfile)\n"
	"\t\tcompopt -o filenames 2>/dev/null\n"
	"\t\twhile IFS= read -r w; do w=$pre$w && COMPREPLY+=(\"${w:${#strip}}\"); done < <(compgen -f -- \"$cur\")\n"
	"\t\treturn ;;\n"
	"\tnone) return ;;\n"
	"\t*)\n"
	"\t\t# No flag's value: a flag, or the command's first word.\n"
	"\t\tif [[ $cur == -* ]]; then\n"
	"\t\t\twords=$flags\n"
	"\t\telif ((npos == 0)) && [[ -n $subs ]]; then\n"
	"\t\t\twords=$subs\n"
	"\t\telse\n"
	"\t\t\treturn\n"
	"\t\tfi ;;\n"
	"\tesac\n"
	"\twhile IFS= read -r w; do w=$pre$w && COMPREPLY+=(\"${w:${#strip}}\"); done < <(compgen -W \"$words\" -- \"$cur\")\n"
	"}\n";

/* The case branch that says what the value of flag f of command c is. */
static int bash_value_case(struct vx_buf *b, const struct completion_cmd *c, const struct completion_flag *f)
{
	const char *eq = f->arg == COMPLETION_ARG_OPTIONAL ? "1" : "?";
	int rc;

	if (f->arg == COMPLETION_ARG_NONE)
		return 0;
	rc = vx_buf_printf(b, "\t%s:%s:%s) ", c->name, f->name, eq);
	if (rc == 0 && f->values) {
		rc = vx_buf_adds(b, "what=words words='");
		rc = rc ? rc : add_words(b, "", f->values);
		rc = rc ? rc : vx_buf_adds(b, "'");
	} else if (rc == 0) {
		rc = vx_buf_printf(b, "what=%s", f->value == COMPLETION_VALUE_ADDRESS ? "addresses"
					     : f->value == COMPLETION_VALUE_DIR ? "dir"
					     : f->value == COMPLETION_VALUE_FILE ? "file" : "none");
	}
	return rc ? rc : vx_buf_adds(b, " ;;\n");
}

/* The flags of c that take a value after a space, and those naming the stack directory. */
static int bash_cmd_case(struct vx_buf *b, const struct completion_cmd *c)
{
	int rc = vx_buf_printf(b, "\t%s)\n\t\tflags='", c->name);

	rc = rc ? rc : add_flags(b, c);
	rc = rc ? rc : vx_buf_adds(b, "'\n\t\tvalued=' ");
	for (size_t k = 0; k < c->nflags && rc == 0; k++)
		if (c->flags[k].arg == COMPLETION_ARG_REQUIRED)
			rc = vx_buf_printf(b, "%s ", c->flags[k].name);
	rc = rc ? rc : vx_buf_adds(b, "'\n\t\tdirs=' ");
	for (size_t k = 0; k < c->nflags && rc == 0; k++)
		if (c->flags[k].value == COMPLETION_VALUE_DIR)
			rc = vx_buf_printf(b, "%s ", c->flags[k].name);
	rc = rc ? rc : vx_buf_adds(b, "'\n\t\tsubs='");
	rc = rc ? rc : add_words(b, "", c->subcommands);
	return rc ? rc : vx_buf_adds(b, "' ;;\n");
}

static int bash_function(struct vx_buf *b, const char *program, const struct completion_cmd *cmds, size_t n)
{
	int rc = vx_buf_printf(b, "_%s", program);

	rc = rc ? rc : vx_buf_adds(b, bash_head);

	for (size_t i = 0; i < n && rc == 0; i++)
		if (cmds[i].alias)
			rc = vx_buf_printf(b, "\t%s) cmd=%s ;;\n", cmds[i].alias, cmds[i].name);
	rc = rc ? rc : vx_buf_adds(b, "\t*)\n\t\tif ((COMP_CWORD == 1)); then\n\t\t\twords='");
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = vx_buf_printf(b, "%s%s", i ? " " : "", cmds[i].name);
	rc = rc ? rc : vx_buf_adds(b, "'\n"
			"\t\t\twhile IFS= read -r w; do COMPREPLY+=(\"$w\"); done < <(compgen -W \"$words\" -- \"$cur\")\n"
			"\t\t\treturn\n\t\tfi\n\t\tcmd=${COMP_WORDS[1]} first=2 ;;\n\tesac\n");
	rc = rc ? rc : vx_buf_adds(b, bash_middle);
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = bash_cmd_case(b, &cmds[i]);
	rc = rc ? rc : vx_buf_adds(b, "\t*) return ;;\n\tesac\n");
	rc = rc ? rc : vx_buf_adds(b, bash_walk);
	for (size_t i = 0; i < n && rc == 0; i++)
		for (size_t k = 0; k < cmds[i].nflags && rc == 0; k++)
			rc = bash_value_case(b, &cmds[i], &cmds[i].flags[k]);
	return rc ? rc : vx_buf_adds(b, bash_tail);
}

/* The names `complete` registers the function for: the program and the aliases. */
static int add_names(struct vx_buf *b, const char *program, const struct completion_cmd *cmds, size_t n)
{
	int rc = vx_buf_adds(b, program);

	for (size_t i = 0; i < n && rc == 0; i++)
		if (cmds[i].alias)
			rc = vx_buf_printf(b, " %s", cmds[i].alias);
	return rc;
}

static int bash_script(struct vx_buf *b, const char *program, const struct completion_cmd *cmds, size_t n)
{
	int rc = vx_buf_printf(b, "# bash completion for %s, generated by '%s completion bash' from its\n"
				  "# command table. Load it with: source <(%s completion bash)\n",
			       program, program, program);

	rc = rc ? rc : bash_function(b, program, cmds, n);
	rc = rc ? rc : vx_buf_printf(b, "complete -o default -F _%s_complete ", program);
	rc = rc ? rc : add_names(b, program, cmds, n);
	return rc ? rc : vx_buf_addc(b, '\n');
}

/*
 * zsh: the bash function through bashcompinit. Loaded from $fpath as an
 * autoloaded _vx (the #compdef line), the first call also completes the
 * word it was called for; sourced, it only registers.
 */
static int zsh_script(struct vx_buf *b, const char *program, const struct completion_cmd *cmds, size_t n)
{
	int rc = vx_buf_adds(b, "#compdef ");

	rc = rc ? rc : add_names(b, program, cmds, n);
	rc = rc ? rc : vx_buf_printf(b, "\n# zsh completion for %s, generated by '%s completion zsh' from its command\n"
				     "# table: the bash completion, through zsh's bashcompinit. Put it in a\n"
				     "# directory of $fpath as _%s, or after compinit: source <(%s completion zsh)\n"
				     "autoload -U +X bashcompinit && bashcompinit\n",
				     program, program, program, program);
	rc = rc ? rc : bash_function(b, program, cmds, n);
	rc = rc ? rc : vx_buf_printf(b, "complete -o default -F _%s_complete ", program);
	rc = rc ? rc : add_names(b, program, cmds, n);
	return rc ? rc : vx_buf_printf(b, "\nif [[ ${funcstack[1]} == _%s ]]; then\n"
				       "\t_bash_complete -o default -F _%s_complete\nfi\n", program, program);
}

/* fish: text in single quotes, where only ' and \ need a backslash. */
static int fish_quote(struct vx_buf *b, const char *s)
{
	int rc = vx_buf_addc(b, '\'');

	for (; s && *s && rc == 0; s++)
		rc = (*s == '\'' || *s == '\\') ? vx_buf_printf(b, "\\%c", *s) : vx_buf_addc(b, *s);
	return rc ? rc : vx_buf_addc(b, '\'');
}

/* One flag's line, for the program (cond: the command's condition) or an alias (cond NULL). */
static int fish_flag(struct vx_buf *b, const char *bin, const char *cond, const struct completion_flag *f)
{
	int rc = vx_buf_printf(b, "complete -c %s", bin);

	if (rc == 0 && cond)
		rc = vx_buf_printf(b, " -n '__fish_seen_subcommand_from %s'", cond);
	rc = rc ? rc : vx_buf_printf(b, " -o %s", f->name);
	if (rc == 0 && f->values) {
		rc = vx_buf_adds(b, f->arg == COMPLETION_ARG_REQUIRED ? " -x -a '" : " -f -a '");
		rc = rc ? rc : add_words(b, "", f->values);
		rc = rc ? rc : vx_buf_addc(b, '\'');
	} else if (rc == 0 && f->arg == COMPLETION_ARG_REQUIRED) {
		rc = vx_buf_adds(b, f->value == COMPLETION_VALUE_ADDRESS ? " -x -a '(__vx_fish_addresses)'"
				    : f->value == COMPLETION_VALUE_DIR ? " -x -a '(__fish_complete_directories)'"
				    : f->value == COMPLETION_VALUE_FILE ? " -r -F" : " -x");
	}
	return rc ? rc : vx_buf_addc(b, '\n');
}

static int fish_script(struct vx_buf *b, const char *program, const struct completion_cmd *cmds, size_t n)
{
	static const struct completion_flag common[] = {
		{ .name = "help", .arg = COMPLETION_ARG_NONE },
		{ .name = "debug", .arg = COMPLETION_ARG_NONE },
	};
	int rc = vx_buf_printf(b, "# fish completion for %s, generated by '%s completion fish' from its\n"
				  "# command table. Load it with: %s completion fish | source\n"
				  "function __vx_fish_addresses\n"
				  "\tset -l prog (commandline -opc)[1]\n"
				  "\t$prog __complete addresses 2>/dev/null\n"
				  "end\n",
			       program, program, program);

	for (size_t i = 0; i < n && rc == 0; i++) {
		const struct completion_cmd *c = &cmds[i];

		rc = vx_buf_printf(b, "complete -c %s -n __fish_use_subcommand -f -a %s -d ", program, c->name);
		rc = rc ? rc : fish_quote(b, c->summary);
		rc = rc ? rc : vx_buf_addc(b, '\n');
		if (rc == 0 && c->subcommands) {
			rc = vx_buf_printf(b, "complete -c %s -n '__fish_seen_subcommand_from %s' -f -a '", program,
					   c->name);
			rc = rc ? rc : add_words(b, "", c->subcommands);
			rc = rc ? rc : vx_buf_adds(b, "'\n");
		}
		for (size_t k = 0; k < c->nflags + 2 && rc == 0; k++) {
			const struct completion_flag *f = k < c->nflags ? &c->flags[k] : &common[k - c->nflags];

			rc = fish_flag(b, program, c->name, f);
			if (rc == 0 && c->alias)
				rc = fish_flag(b, c->alias, NULL, f);
		}
	}
	return rc;
}

int completion_script(struct vx_buf *out, const char *shell, const char *program,
		      const struct completion_cmd *cmds, size_t ncmds)
{
	if (!word_ok(program) || !table_ok(cmds, ncmds))
		return VX_EINVAL;
	if (!strcmp(shell, "bash"))
		return bash_script(out, program, cmds, ncmds) ? VX_ENOMEM : 0;
	if (!strcmp(shell, "zsh"))
		return zsh_script(out, program, cmds, ncmds) ? VX_ENOMEM : 0;
	if (!strcmp(shell, "fish"))
		return fish_script(out, program, cmds, ncmds) ? VX_ENOMEM : 0;
	return VX_EINVAL;
}
