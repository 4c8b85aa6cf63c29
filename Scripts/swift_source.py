r'''Splits Swift source text into its code and its comments, for the checks in this folder.

`scan(text)` returns the code with comments and the contents of string literals blanked out (interpolations
are kept: they are code), and the comments as (line number, text) pairs, one per comment line. Line breaks
are kept in the code, so that a line of the code is the same line of the file.

>>> code, comments = scan('let a = "x // y" // note\n/* one\ntwo */ let b = "\\(f("z"))"\n')
>>> code.splitlines()
['let a = "" ', '', ' let b = "\\(f(""))"']
>>> comments
[(1, '// note'), (2, '/* one'), (3, 'two */')]
>>> scan('/// A doc comment.\nlet c = """\n  // not a comment\n  """\n')[1]
[(1, '/// A doc comment.')]
'''


def scan(text):
    """(code, comments) of a Swift file's text; see the module's documentation."""
    code = []
    comments = []
    line = 1
    i, n = 0, len(text)
    # A stack of contexts: "code", or a string ('"' or '"""') waiting for its end; an interpolation
    # pushes "code" with a parenthesis depth.
    stack = [["code", 0]]

    def comment(start, end):
        nonlocal line
        for offset, part in enumerate(text[start:end].split("\n")):
            comments.append((line + offset, part))
        breaks = text.count("\n", start, end)
        code.append("\n" * breaks)
        line += breaks

    def enter(kind, token):
        """Pushes a context opened by `token` (a string's quotes, an interpolation's `\\(`)."""
        nonlocal i
        stack.append([kind, 0])
        code.append(token)
        i += len(token)

    while i < n:
        kind = stack[-1][0]
        c = text[i]
        if kind == "code":
            if text.startswith("//", i):
                end = text.find("\n", i)
                end = n if end < 0 else end
                comment(i, end)
                i = end
                continue
            if text.startswith("/*", i):
                end = text.find("*/", i + 2)
                end = n if end < 0 else end + 2
                comment(i, end)
                i = end
                continue
            opener = '"""' if text.startswith('"""', i) else '"' if c == '"' else None
            if opener:
                enter(opener, opener)
                continue
            if len(stack) > 1:
                if c == "(":
                    stack[-1][1] += 1
                elif c == ")":
                    if stack[-1][1] == 0:
                        stack.pop()
                        code.append(")")
                        i += 1
                        continue
                    stack[-1][1] -= 1
            if c == "\n":
                line += 1
            code.append(c)
            i += 1
        else:
            if text.startswith("\\(", i):
                enter("code", "\\(")
                continue
            if c == "\\":
                if text.startswith("\n", i + 1):
                    line += 1
                    code.append("\n")
                i += 2
                continue
            if text.startswith(kind, i):
                stack.pop()
                code.append(kind)
                i += len(kind)
                continue
            if c == "\n":
                line += 1
                code.append("\n")
            i += 1
    return "".join(code), comments


def code_only(text):
    """The code of a Swift file's text, comments and string contents blanked out."""
    return scan(text)[0]
