/**
 * Tool policy: which principal may call which tool. Rules match tool names
 * by glob — local tools, workflows (a workflow is served as a tool of its
 * name) and upstream tools under their namespace (`github_*`) alike — and
 * say who passes: named principals, members of a group (token file
 * `groups`), or holders of every listed scope (JWT `scope`/`scp`, token file
 * `scopes`). The first rule whose pattern matches a name decides; a name no
 * rule matches gets `default` (`allow` unless configured otherwise).
 *
 * One decision, asked everywhere a tool can be reached: `tools/list` shows a
 * principal only what passes, `tools/call` (and so task creation) refuses
 * the rest before anything runs, and a workflow step is asked with the
 * rights of the principal that started the run, never taskvisor's own.
 */
import type { Grants, Principal } from './principal.js';

/** One rule: which tools, and who may call them. A rule naming nobody lets every principal pass. */
export interface ToolPolicyRule {
  /** Tool name globs: `*` any run of characters, `?` one character; everything else literal. */
  tools: readonly string[];
  /** Principal ids that pass. */
  principals?: readonly string[];
  /** Groups whose members pass. */
  groups?: readonly string[];
  /** Scopes a principal must hold, all of them, to pass. */
  scopes?: readonly string[];
}

/** The policy as configured (config `toolPolicy`, `RuntimeOptions.toolPolicy`). */
export interface ToolPolicyOptions {
  rules: readonly ToolPolicyRule[];
  /** What a tool no rule matches gets. Default `allow`. */
  default?: 'allow' | 'deny';
}

/** Who asks: a principal id and what it holds. */
export type Caller = Pick<Principal, 'id'> & Grants;

interface CompiledRule {
  readonly matches: (name: string) => boolean;
  readonly rule: ToolPolicyRule;
}

/**
 * A tool name glob as a matcher: `*` any run of characters, `?` one. Not a
 * regular expression: `^.*a.*b$` backtracks polynomially on a long name, and
 * the rate limits match names a client sent. This scan remembers only the
 * last `*` (at most name × glob steps, and names and globs are short).
 */
export function globMatcher(glob: string): (name: string) => boolean {
  return (name) => {
    let g = 0;
    let n = 0;
    let star = -1;
    let resume = 0;
    while (n < name.length) {
      if (g < glob.length && (glob[g] === '?' || (glob[g] !== '*' && glob[g] === name[n]))) {
        g++;
        n++;
      } else if (g < glob.length && glob[g] === '*') {
        star = g++;
        resume = n;
      } else if (star >= 0) {
        g = star + 1;
        n = ++resume;
      } else return false;
    }
    while (g < glob.length && glob[g] === '*') g++;
    return g === glob.length;
  };
}

/** Whether `caller` satisfies `rule`'s "who". */
function passes(rule: ToolPolicyRule, caller: Caller): boolean {
  const { principals, groups, scopes } = rule;
  if (!principals?.length && !groups?.length && !scopes?.length) return true;
  if (principals?.includes(caller.id)) return true;
  if (groups?.length && caller.groups?.some((group) => groups.includes(group))) return true;
  if (scopes?.length) {
    const held = caller.scopes ?? [];
    if (scopes.every((scope) => held.includes(scope))) return true;
  }
  return false;
}

/** The compiled policy; {@link ToolPolicy.allowAll} when none is configured. */
export class ToolPolicy {
  readonly #rules: readonly CompiledRule[];
  readonly #deny: boolean;

  constructor(options: ToolPolicyOptions) {
    this.#rules = options.rules.flatMap((rule) => rule.tools.map((glob) => ({ matches: globMatcher(glob), rule })));
    this.#deny = options.default === 'deny';
  }

  /** No rules, default allow: every principal may call every tool. */
  static readonly allowAll = new ToolPolicy({ rules: [] });

  /** Whether the policy restricts anything at all (the checks are skipped otherwise). */
  get restricts(): boolean {
    return this.#rules.length > 0 || this.#deny;
  }

  /** Whether `caller` may call (and see) the tool `name`. */
  allows(caller: Caller, name: string): boolean {
    for (const { matches, rule } of this.#rules) if (matches(name)) return passes(rule, caller);
    return !this.#deny;
  }
}
