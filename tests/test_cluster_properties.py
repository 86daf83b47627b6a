"""client.properties files read as java.util.Properties.load reads them (statectl.cluster.properties)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from statectl.cluster.properties import Property, parse_properties, read_properties_file
from statectl.errors import ConfigError


def pairs(text: str) -> list[tuple[str, str]]:
    return [(p.key, p.value) for p in parse_properties(text, "client.properties")]


# ---------------------------------------------------------------- syntax, as Java reads it
@pytest.mark.parametrize(
    "text, expected",
    [
        pytest.param("a=1\n", [("a", "1")], id="equals"),
        pytest.param("a:1\n", [("a", "1")], id="colon"),
        pytest.param("a 1\n", [("a", "1")], id="space"),
        pytest.param("a\t1\n", [("a", "1")], id="tab"),
        pytest.param("a\f1\n", [("a", "1")], id="form-feed"),
        pytest.param("  a  =  1\n", [("a", "1")], id="blanks-around-equals"),
        pytest.param("a   :   1\n", [("a", "1")], id="blanks-around-colon"),
        pytest.param("a = = 1\n", [("a", "= 1")], id="second-equals-is-value"),
        pytest.param("a:=1\n", [("a", "=1")], id="colon-then-equals"),
        pytest.param("a =: 1\n", [("a", ": 1")], id="equals-then-colon"),
        pytest.param("a 1 2 3\n", [("a", "1 2 3")], id="value-keeps-inner-spaces"),
        pytest.param("a=1   \n", [("a", "1   ")], id="value-keeps-trailing-spaces"),
        pytest.param("a=x=y:z\n", [("a", "x=y:z")], id="separators-inside-value"),
        pytest.param("a=1 # not a comment\n", [("a", "1 # not a comment")], id="hash-inside-value"),
    ],
)
def test_properties_separators(text, expected):
    assert pairs(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        pytest.param("# a=1\nb=2\n", [("b", "2")], id="hash-comment"),
        pytest.param("! a=1\nb=2\n", [("b", "2")], id="bang-comment"),
        pytest.param("   # a=1\n\t! b=2\nc=3\n", [("c", "3")], id="indented-comments"),
        pytest.param("\n\n  \n\t\na=1\n\n", [("a", "1")], id="blank-lines"),
        pytest.param("# comment ending in backslash \\\na=1\n", [("a", "1")], id="comment-backslash-does-not-continue"),
        pytest.param("", [], id="empty-file"),
    ],
)
def test_properties_comments_and_blank_lines(text, expected):
    assert pairs(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        pytest.param(
            "a=one\\\n   two\\\n\tthree\n", [("a", "onetwothree")], id="odd-backslash-continues-leading-blanks-dropped"
        ),
        pytest.param("a=x\\\\\nb=2\n", [("a", "x\\"), ("b", "2")], id="even-backslashes-end-the-line"),
        pytest.param("a=y\\\\\\\n  z\n", [("a", "y\\z")], id="three-backslashes-continue"),
        pytest.param("a=1\\\n#still the value\n", [("a", "1#still the value")], id="continued-hash-is-not-a-comment"),
        pytest.param("a=1\\\n\nb=2\n", [("a", "1"), ("b", "2")], id="blank-line-ends-continuation"),
        pytest.param("a=1\nb=2\\", [("a", "1"), ("b", "2")], id="backslash-at-eof"),
        pytest.param("\\\n#c=1\nb=3\n", [("b", "3")], id="lone-backslash-line-then-comment"),
        pytest.param("\\\n\nb=3\n", [("b", "3")], id="lone-backslash-line-then-blank"),
        pytest.param("key\\\n  =value\n", [("key", "value")], id="continuation-inside-separator"),
        pytest.param("a=1\r\nb=2\\\r\n  3\rc=4\n", [("a", "1"), ("b", "23"), ("c", "4")], id="crlf-and-lone-cr"),
    ],
)
def test_properties_continuation_lines(text, expected):
    assert pairs(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        pytest.param("a=x\\ty\n", [("a", "x\ty")], id="tab"),
        pytest.param("a=x\\ny\n", [("a", "x\ny")], id="newline"),
        pytest.param("a=x\\ry\n", [("a", "x\ry")], id="carriage-return"),
        pytest.param("a=x\\fy\n", [("a", "x\fy")], id="form-feed"),
        pytest.param("a=\\u00e9\\u0041\\u20AC\n", [("a", "éA€")], id="unicode"),
        pytest.param("a=\\q\\\\\n", [("a", "q\\")], id="other-escapes-drop-backslash"),
        pytest.param("a=x\\=y\\:z\n", [("a", "x=y:z")], id="escaped-separators-in-value"),
        pytest.param("key\\=x=1\n", [("key=x", "1")], id="escaped-equals-in-key"),
        pytest.param("key\\:y:2\n", [("key:y", "2")], id="escaped-colon-in-key"),
        pytest.param("key\\ z 3\n", [("key z", "3")], id="escaped-space-in-key"),
        pytest.param("\\#hash=4\n", [("#hash", "4")], id="escaped-hash-is-a-key"),
        pytest.param("a=\\ lead\n", [("a", " lead")], id="escaped-leading-space-in-value"),
        pytest.param("\\u0061\\u0062=c\n", [("ab", "c")], id="unicode-in-key"),
        pytest.param("a=\\ud83d\\ude00!\n", [("a", "\U0001f600!")], id="surrogate-pair-is-one-character"),
    ],
)
def test_properties_escapes(text, expected):
    assert pairs(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        pytest.param("a=\n", [("a", "")], id="empty-after-equals"),
        pytest.param("a:\n", [("a", "")], id="empty-after-colon"),
        pytest.param("a=   \n", [("a", "")], id="only-blanks"),
        pytest.param("bare\n", [("bare", "")], id="key-without-value"),
        pytest.param("bare   \n", [("bare", "")], id="key-with-trailing-blanks"),
        pytest.param("=v\n", [("", "v")], id="empty-key"),
    ],
)
def test_properties_empty_values_and_bare_keys(text, expected):
    assert pairs(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        # \f, \v, \x1c-\x1e and \x85 end lines for str.splitlines, not for Java: they stay in the value.
        pytest.param("a=x\fy\n", [("a", "x\fy")], id="form-feed"),
        pytest.param("a=x\x0by\n", [("a", "x\x0by")], id="vertical-tab"),
        pytest.param("a=x\x1cy\n", [("a", "x\x1cy")], id="file-separator"),
        pytest.param("a=x\x85y\n", [("a", "x\x85y")], id="next-line"),
        pytest.param("a=x\u2028y\n", [("a", "x\u2028y")], id="line-separator"),
    ],
)
def test_properties_only_cr_and_lf_end_lines(text, expected):
    assert pairs(text) == expected


def test_properties_duplicate_keys_are_all_kept_in_order():
    assert parse_properties("a=1\nb=2\na=3\n", "c.properties") == [
        Property("a", "1", "c.properties:1"),
        Property("b", "2", "c.properties:2"),
        Property("a", "3", "c.properties:3"),
    ]


def test_properties_origin_is_the_first_line_of_a_logical_line():
    text = (
        "# header\n\nsecurity.protocol=SASL_SSL\n"
        'sasl.jaas.config=Module required \\\n  username="a" \\\n  password="b";\n'
        "\r\nacks=all\n"
    )
    assert [(p.key, p.origin) for p in parse_properties(text, "/etc/kafka/client.properties")] == [
        ("security.protocol", "/etc/kafka/client.properties:3"),
        ("sasl.jaas.config", "/etc/kafka/client.properties:4"),
        ("acks", "/etc/kafka/client.properties:8"),
    ]


@pytest.mark.parametrize(
    "text, problem",
    [
        pytest.param(
            "a=1\nb=\\u12g4\n", "client.properties:2: malformed \\uXXXX escape '\\\\u12g4'", id="bad-hex-digit"
        ),
        pytest.param("a=\\u12", "client.properties:1: malformed \\uXXXX escape '\\\\u12'", id="too-short-at-eof"),
        pytest.param("# x\n\\uZZZZ=1\n", "client.properties:2: malformed \\uXXXX escape '\\\\uZZZZ'", id="in-key"),
        pytest.param(
            "a=\\\n  \\u00\n",
            "client.properties:1: malformed \\uXXXX escape '\\\\u00'",
            id="continued-line-reports-first-line",
        ),
    ],
)
def test_properties_malformed_unicode_escape(text, problem):
    with pytest.raises(ConfigError) as err:
        parse_properties(text, "client.properties")
    assert err.value.problems == [problem]
    assert err.value.exit_code == 2


def test_properties_read_back_what_the_secure_broker_writes():
    """The local secured broker writes client.properties values with its _prop; they must read back."""
    from statectl.adapters.local.broker_secure import _prop

    values = ["plain", "back\\slash", 'quo"te', "caf\u00e9", "emoji \U0001f600", "a=b:c d#e!f", "/path/with space"]
    text = "".join(f"k{i}={_prop(v)}\n" for i, v in enumerate(values))
    assert [p.value for p in parse_properties(text, "client.properties")] == values


# ---------------------------------------------------------------- files
def test_properties_file_is_read_as_iso_8859_1(tmp_path):
    path = tmp_path / "client.properties"
    path.write_bytes(b"sasl.username=caf\xe9\nclient.id=\\u00e9t\xe9\n")
    assert read_properties_file(path) == [
        Property("sasl.username", "café", f"{path}:1"),
        Property("client.id", "été", f"{path}:2"),
    ]


@pytest.mark.parametrize(
    "make, message",
    [
        pytest.param(lambda p: None, "client config {path} does not exist", id="missing"),
        pytest.param(lambda p: p.mkdir(), "client config {path} is a directory, not a properties file", id="directory"),
    ],
)
def test_properties_file_that_cannot_be_read(tmp_path, make, message):
    path = tmp_path / "client.properties"
    make(path)
    with pytest.raises(ConfigError) as err:
        read_properties_file(path)
    assert err.value.problems == [message.format(path=path)]
    assert err.value.exit_code == 2


# ---------------------------------------------------------------- against real Java
JAVA_LOADER = r"""
import java.io.*;
import java.util.*;

public class LoadProps {
    static String q(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }
    public static void main(String[] args) throws Exception {
        StringBuilder out = new StringBuilder("[");
        for (int i = 0; i < args.length; i++) {
            String result;
            try (InputStream in = new FileInputStream(args[i])) {
                Properties p = new Properties();
                p.load(in);
                StringBuilder m = new StringBuilder("{");
                for (String k : new TreeSet<>(p.stringPropertyNames())) {
                    if (m.length() > 1) m.append(", ");
                    m.append(q(k)).append(": ").append(q(p.getProperty(k)));
                }
                result = m.append("}").toString();
            } catch (IllegalArgumentException e) {
                result = "null";
            }
            out.append(i > 0 ? ", " : "").append(result);
        }
        System.out.println(out.append("]"));
    }
}
"""

#: Tricky files, as bytes: Java's Properties.load(InputStream) reads them as ISO-8859-1.
JAVA_CASES = {
    "separators": b"a=1\nb:2\nc 3\nd\t4\ne\x0c5\n  f  =  6  \ng = = 7\nh:=8\ni =: 9\n",
    "comments": b"# x=1\n! y=2\n   # z=3\nk=v # not a comment\n# ends in \\\nl=1\n",
    "continuation": b"a=one\\\n   two\\\n\tthree\nb=x\\\\\nc=y\\\\\\\n  z\nd=1\\\n#still value\n",
    "continuation-blank": b"a=1\\\n\nb=2\\\n   \nc=3\n",
    "lone-backslash": b"\\\n#c=1\n\\\n\nb=3\n  \\\n  d=4\n",
    "escapes": b"tab=a\\tb\nnl=a\\nb\ncr=a\\rb\nff=a\\fb\nuni=\\u00e9\\u0041\nother=\\q\\\\\n"
    b"key\\=x=1\nkey\\:y:2\nkey\\ z 3\n\\#hash=4\nlead=\\ x\n",
    "empty": b"empty=\nbare\nspaces=   \ncolon:\n=nokey\n",
    "duplicate": b"a=1\na=2\n",
    "control-chars": b"f=x\x0cy\nv=x\x0by\nn=x\x85y\ns=x\x1cy\n",
    "line-ends": b"a=1\r\nb=2\\\r\n  3\rc=4\n",
    "eof-backslash": b"a=1\nb=2\\",
    "latin-1": b"user=caf\xe9\n",
    "surrogates": b"emoji=\\ud83d\\ude00\\u00e9\n",
    "jaas": b"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
    b'    username="alice" \\\n    password="p;a\\\\"ss";\n',
    "bad-unicode": b"a=\\u12g4\n",
    "short-unicode": b"a=\\u12",
}


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK (java on PATH)")
def test_properties_match_java_util_properties(tmp_path):
    """Each tricky file means the same to parse_properties (last value of a key wins, as in
    client_settings) as to java.util.Properties.load; a malformed \\u escape is an error to both."""
    source = tmp_path / "LoadProps.java"
    source.write_text(JAVA_LOADER)
    files = []
    for name, data in JAVA_CASES.items():
        path = tmp_path / f"{name}.properties"
        path.write_bytes(data)
        files.append(path)
    done = subprocess.run(
        ["java", str(source), *map(str, files)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    java = dict(zip(JAVA_CASES, json.loads(done.stdout)))

    ours = {}
    for name, path in zip(JAVA_CASES, files):
        try:
            ours[name] = {p.key: p.value for p in read_properties_file(path)}
        except ConfigError:
            ours[name] = None
    assert ours == java
    assert java["bad-unicode"] is None and java["control-chars"]["v"] == "x\x0by"  # the comparison compared something


def test_secrets_are_registered_as_they_are_read_but_a_credentials_provider_is_a_class_name():
    """A password is hidden from every message from the moment its file is read (fuzzing found
    one printed when a problem elsewhere stopped validation first); a credentials provider's class
    name is not a secret and stays readable in errors about it."""
    from statectl import redact
    from statectl.cluster.properties import parse_properties

    redact.forget_all()
    parse_properties(
        "ssl.truststore.password=hunter2-secret\n"
        'sasl.jaas.config=x required username="u" password="jaas-secret";\n'
        "fs.s3a.aws.credentials.provider=com.example.Mine\n",
        "client.properties",
    )
    assert {"hunter2-secret", "jaas-secret"} <= redact.registered()
    assert "com.example.Mine" not in redact.registered()
    redact.forget_all()
