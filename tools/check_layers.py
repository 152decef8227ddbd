#!/usr/bin/env python3
"""Lists the calls in the core that break its layering (docs/architecture.md, "The layers").

The layers are in tools/layers.conf, bottom first. A function of file F may call a function of
file G when G's layer is below F's, when G is F itself, or when G is the owner of F's own layer;
and along the few exceptions the file names (the scheduler's loop). Every other call is printed
as "file:line: caller -> callee (file), layer A calls up into layer B" and the exit status is 1.

Definitions come from Universal Ctags (the functions of each core/src/*.c); calls are the names
of those functions followed by "(" in another file's code, comments and strings left out.
"""
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "core", "src")


def read_conf(path):
    layers, owners, allowed = [], {}, set()
    for n, line in enumerate(open(path), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        kind, _, rest = line.partition(":")
        words = rest.split()
        if kind == "layer":
            name, files = words[0], words[1:]
            layers.append((name, files))
        elif kind == "owner":
            owners[words[0]] = words[1:]
        elif kind == "allow":
            if len(words) != 3 or words[1] != "->":
                sys.exit(f"{path}:{n}: 'allow: FILE -> FILE'")
            allowed.add((words[0], words[2]))
        else:
            sys.exit(f"{path}:{n}: unknown line kind '{kind}' (layer, owner, allow)")
    return layers, owners, allowed


def definitions(files):
    """Each function with external linkage: its name -> its file (static ones are left out:
    no other file can call them, and one name may be static in many)."""
    if not shutil.which("ctags"):
        sys.exit("check_layers: ctags (Universal Ctags, Debian's universal-ctags) is not installed; "
                 "./dev deps installs it")
    out = subprocess.run(["ctags", "-f", "-", "--fields=+f", "--c-kinds=f", "--language-force=C"]
                         + files, capture_output=True, text=True, check=True).stdout
    defs = {}
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) < 2 or "file:" in parts[3:]:
            continue
        defs[parts[0]] = os.path.basename(parts[1])
    return defs


def code_only(text):
    """The text with comments, strings and character literals blanked (lines kept)."""
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def main():
    conf = os.path.join(ROOT, "tools", "layers.conf")
    layers, owners, allowed = read_conf(conf)
    layer_of = {}
    for i, (name, files) in enumerate(layers):
        for f in files:
            if f in layer_of:
                sys.exit(f"{conf}: {f} is in two layers")
            layer_of[f] = i
    sources = sorted(f for f in os.listdir(SRC) if f.endswith(".c"))
    missing = [f for f in sources if f not in layer_of]
    if missing:
        print("tools/layers.conf places no layer for: " + ", ".join(missing))
        return 1
    gone = [f for f in layer_of if f not in sources]
    if gone:
        print("tools/layers.conf names files that are not in core/src: " + ", ".join(gone))
        return 1
    defs = definitions([os.path.join(SRC, f) for f in sources])
    call = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
    broken = 0
    for f in sources:
        text = code_only(open(os.path.join(SRC, f)).read())
        me = layer_of[f]
        for n, line in enumerate(text.splitlines(), 1):
            for m in call.finditer(line):
                g = defs.get(m.group(1))
                if not g or g == f or (f, g) in allowed:
                    continue
                them = layer_of[g]
                if them < me:
                    continue
                if them == me and g in owners.get(layers[me][0], []):
                    continue
                where = "calls up into" if them > me else "calls across, not to its owner, in"
                print(f"core/src/{f}:{n}: {m.group(1)}() of {g}: layer {layers[me][0]} {where} "
                      f"layer {layers[them][0]}")
                broken += 1
    if broken:
        print(f"check_layers: {broken} calls break the layers (tools/layers.conf, "
              "docs/architecture.md)")
        return 1
    print(f"check_layers: {len(sources)} files in {len(layers)} layers, every call goes down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
