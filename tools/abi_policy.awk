# abi_policy.awk: judges an abidiff report by docs/abi-policy.md, what a minor version may change.
#
# Usage: awk -v status=STATUS -f abi_policy.awk BASELINE REPORT
#   STATUS    abidiff's exit status
#   BASELINE  the ABI XML abidiff compared against (where each struct's last member was)
#   REPORT    abidiff's report, from `abidiff --leaf-changes-only --harmless` (abi_check.sh)
# Prints "  not allowed: ..." for each change the policy forbids and exits 1 when there is one;
# prints "  allowed: ..." for each change it accepted.
#
# Why a judge of the report, and not abidiff's exit status or a suppression file alone:
#   - abidiff sets ABIDIFF_ABI_INCOMPATIBLE_CHANGE (8) only for a removed function or variable;
#     every change of a type, a member inserted in the middle or a fixed struct grown, sets
#     ABIDIFF_ABI_CHANGE (4) alone, as does an added function, which the policy allows.
#   - a [suppress_type] with `has_data_member_inserted_at = end` (libabigail 2.2, Debian 12)
#     also suppresses a change of a listed struct that inserts nothing: a member's type changed,
#     or members moved by a grown one before them, with or without a member appended too. And
#     naming tabq_plugin there hides every change of the vtables it points at.
# So the check asks abidiff for every change, each type reported once where it changed
# (--leaf-changes-only; --harmless adds renamed members and added enumerators, which abidiff
# leaves out by default), and this judge accepts exactly:
#   - added functions;
#   - members appended to a struct that may grow (growable, below): every inserted member starts
#     after the baseline's last member (one inserted in the middle moves the members after it,
#     or fills a hole between two: either way it is not appended). A struct read through its
#     `size` must also have grown past its old size: a member in its old tail padding would
#     leave the old and the new layout one size, which `size` (or TABQ_HAS_MEMBER) cannot tell
#     apart;
#   - enumerators added without changing any existing one (codes, tabq_param ids, value
#     types), but for a count kept after the last one (TABQ_CODE_COUNT_, named *_COUNT_).
# Anything else the report says, in whatever words, is a violation: a line this judge does not
# know fails the check rather than pass unread. awk, not a script language with a slower start:
# abi_check_cases runs it once per case.

BEGIN {
  # docs/abi-policy.md: the structs that begin with `size`, and tabq_build and tabq_stats, which
  # the core fills and the other side reads up to the members it knows: members may be appended
  # to them in a minor. Every other struct's layout is fixed for 1.x (tabq_error, tabq_value,
  # tabq_stmt, tabq_col, tabq_events, tabq_outcome, tabq_header, ...).
  n = split("tabq_table tabq_broker_options tabq_subscription_options tabq_message " \
            "tabq_codec tabq_stats tabq_plugin tabq_host tabq_build tabq_driver_v1 " \
            "tabq_dialect_v1 tabq_rowlock_v1 tabq_lease_v1 tabq_advisory_v1 tabq_byname_v1 " \
            "tabq_schema_spec tabq_schema_options tabq_check_item",
            names, " ")
  for (i = 1; i <= n; i++)
    growable[names[i]] = 1
  # Of those, the ones with no `size` to say which members are there: a member may go into
  # their old tail padding.
  core_filled["tabq_build"] = 1
  core_filled["tabq_stats"] = 1
  core_filled["tabq_check_item"] = 1
  status += 0
  nv = na = 0
  if (status % 4 != 0) {
    violation("abidiff failed (exit status " status "): no comparison was made")
    tool_failed = 1
  }
  if (int(status / 8) % 2)
    violation("abidiff: incompatible change (ABIDIFF_ABI_INCOMPATIBLE_CHANGE)")
}

function violation(text) { violations[++nv] = text }
function accept(text) { accepted[++na] = text }

# The value of attribute `key` on the current line of the XML.
function attr(key) {
  if (!match($0, key "='[^']*'"))
    return ""
  return substr($0, RSTART + length(key) + 2, RLENGTH - length(key) - 3)
}

# The baseline, first file: the offset of each struct's last member. abidw writes one element
# a line; a declaration without a body ends in "/>".
FNR == NR {
  if ($0 ~ /^ *<(class|union)-decl / && $0 !~ /\/>$/)
    stack[++depth] = attr("name")
  else if ($0 ~ /^ *<\/(class|union)-decl>/)
    depth--
  else if ($0 ~ /^ *<data-member / && depth > 0) {
    at = attr("layout-offset-in-bits") + 0
    if (!(stack[depth] in last) || at > last[stack[depth]])
      last[stack[depth]] = at
  }
  next
}

# The report: entries of a line at column 0 and the indented lines under it.
/^[ \t]*$/ { next }
/^[^ ]/ || entries == 0 {
  judge()
  head = $0
  nbody = 0
  entries++
  next
}
{
  line = $0
  sub(/^ +/, "", line)
  body[++nbody] = line
}

END {
  judge()
  if (status % 8 >= 4 && nv == 0 && na == 0)
    violation("abidiff reports a change this judge found no line for")
  for (i = 1; i <= nv; i++)
    print "  not allowed: " violations[i]
  for (i = 1; i <= na; i++)
    print "  allowed: " accepted[i]
  exit nv > 0 ? 1 : 0
}

function judge(   i, name) {
  if (head == "" || tool_failed || head ~ /^[A-Za-z\/ ]+summary: /)
    return
  if (head ~ /^[0-9]+ Added functions?:$/) {
    for (i = 1; i <= nbody; i++)
      if (body[i] ~ /^\[A\] /) {
        name = substr(body[i], 5)
        sub(/    .*$/, "", name)
        accept("added " name)
      } else
        violation(head " " body[i])
  } else if (head ~ /^'struct [A-Za-z_0-9]+' changed:$/) {
    name = head
    gsub(/^'struct |' changed:$/, "", name)
    judge_struct(name)
  } else if (head ~ /^'enum [A-Za-z_0-9]+' changed:$/) {
    name = head
    gsub(/^'enum |' changed:$/, "", name)
    judge_enum(name)
  } else
    violation(head (nbody ? " " body[1] : ""))
  head = ""
}

# One verdict for the struct: its appended members, or the first thing that is not one.
function judge_struct(name,   old, section, appended, problem, i, l, w, member, at, p) {
  if (!(name in growable)) {
    violation("struct " name " changed: its layout is fixed for 1.x")
    return
  }
  old = -1 # its old size in bits, when it grew
  for (i = 1; i <= nbody; i++) {
    l = body[i]
    if (i == 1 && l ~ /^type size changed from [0-9]+ to [0-9]+ \(in bits\)$/) {
      split(l, w, " ")
      if (w[7] + 0 > w[5] + 0) {
        old = w[5] + 0
        continue
      }
    }
    if (i == 1 && l == "type size hasn't changed")
      continue
    if (l ~ /^[0-9]+ data member insertions?:$/) {
      section = "insertions"
      continue
    }
    if (l == "there are data member changes:") {
      section = "changes"
      continue
    }
    if (section == "insertions" && l ~ /^'.+', at offset [0-9]+ \(in bits\)$/) {
      member = at = l
      sub(/^'/, "", member)
      sub(/', at offset [0-9]+ \(in bits\)$/, "", member)
      sub(/^.*', at offset /, "", at)
      at += 0
      if (!(name in last) || at <= last[name])
        p = "'" member "' inserted at bit " at ", before its last member"
      else if (!(name in core_filled) && (old < 0 || at < old))
        p = "'" member "' put at bit " at ", in its old tail padding: the old and the new " \
            "layout would have one size, which `size` could not tell apart"
      else {
        appended = appended (appended == "" ? "" : ", ") member
        continue
      }
    } else {
      p = section == "changes" ? "an existing member changed (" l ")" : l
      section = ""
    }
    if (problem == "")
      problem = p
  }
  if (problem != "")
    violation("struct " name ": " problem "; members may only be appended")
  else if (appended != "")
    accept("struct " name ": appended " appended)
  else
    violation("struct " name " changed, and no member was appended")
}

# Enumerators added, none changed (but for a count after the last one, which grows).
function judge_enum(name,   section, added, problem, more, i, l, w) {
  for (i = 1; i <= nbody; i++) {
    l = body[i]
    if (l == "type size hasn't changed") {
      section = ""
      continue
    }
    if (l ~ /^[0-9]+ enumerator insertions?:$/) {
      section = "insertions"
      continue
    }
    if (l ~ /^[0-9]+ enumerator changes?:$/) {
      section = "changes"
      continue
    }
    if (section == "insertions" && l ~ /^'[^']+' value '-?[0-9]+'$/) {
      added = added (added == "" ? "" : ", ") l
      continue
    }
    if (section == "changes" && l ~ /^'([A-Za-z_0-9]+::)?[A-Za-z_0-9]+_COUNT_' from value '-?[0-9]+' to '-?[0-9]+'$/) {
      split(l, w, "'")
      if (w[6] + 0 > w[4] + 0)
        continue
    }
    if (problem == "")
      problem = l
    else
      more++
  }
  if (problem != "")
    violation("enum " name ": " problem (more ? " (and " more " more)" : "") \
              ": enumerators may only be added")
  else if (added != "")
    accept("enum " name ": added " added)
}
