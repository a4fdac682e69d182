/* Chat templates against Python jinja2's renderings (every NAME.json in
 * ../shared/chat_templates), the template language piece by piece, and
 * hostile templates that must fail cleanly. */
#include <jansson.h>

#include "test_util.h"

static char *dump(const json_t *j) { return json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER); }

static void run_case_file(const char *dir, const char *json_name) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, json_name);
    json_error_t jerr;
    json_t *spec = json_load_file(path, 0, &jerr);
    CHECK_MSG(spec != NULL, "%s: %s", path, jerr.text);
    if (!spec) return;
    snprintf(path, sizeof path, "%s/%s", dir, json_string_value(json_object_get(spec, "template")));
    size_t src_len = 0;
    char *src = test_read_file(path, &src_len);
    CHECK_MSG(src != NULL, "cannot read %s", path);
    sprout_template *t = NULL;
    if (src && sprout_template_parse(src, src_len, &t) != SPROUT_OK) CHECK_MSG(0, "%s: %s", path, sprout_last_error());
    const json_t *bos = json_object_get(spec, "bos_token"), *eos = json_object_get(spec, "eos_token");
    char *extra = dump(json_object_get(spec, "other_variables"));
    const json_t *cases = json_object_get(spec, "cases");
    int passed = 0;
    for (size_t i = 0; t && i < json_array_size(cases); i++) {
        const json_t *c = json_array_get(cases, i);
        char *messages = dump(json_object_get(c, "messages"));
        sprout_template_options opt = {
            .struct_size = sizeof opt,
            .add_generation_prompt = json_is_true(json_object_get(c, "add_generation_prompt")),
            .bos_token = json_is_string(bos) ? json_string_value(bos) : NULL,
            .eos_token = json_is_string(eos) ? json_string_value(eos) : NULL,
            .extra_json = extra,
            .now = json_string_value(json_object_get(spec, "strftime_now_fixed_to")),
        };
        char *out = NULL;
        size_t len = 0;
        sprout_status st = sprout_template_render_json(t, messages, &opt, &out, &len);
        const json_t *expected = json_object_get(c, "expected"), *expected_error = json_object_get(c, "expected_error");
        const char *id = json_string_value(json_object_get(c, "id"));
        if (expected) {
            bool same = st == SPROUT_OK && len == json_string_length(expected) && !memcmp(out, json_string_value(expected), len);
            if (same) passed++;
            else if (st != SPROUT_OK) fprintf(stderr, "%s %s: error: %s\n", json_name, id, sprout_last_error());
            else {
                size_t k = 0;
                const char *want = json_string_value(expected);
                while (k < len && k < json_string_length(expected) && out[k] == want[k]) k++;
                fprintf(stderr, "%s %s: differs at byte %zu\n  expected: [%.*s]\n  got:      [%.*s]\n", json_name, id, k,
                        (int)(json_string_length(expected) - k > 80 ? 80 : json_string_length(expected) - k), want + k,
                        (int)(len - k > 80 ? 80 : len - k), out + k);
            }
        } else if (expected_error) {
            bool same = st == SPROUT_ERR_FORMAT && sprout_template_error_raised() &&
                        !strcmp(sprout_last_error(), json_string_value(expected_error));
            if (same) passed++;
            else fprintf(stderr, "%s %s: expected error '%s', got status %d '%s'\n", json_name, id,
                         json_string_value(expected_error), st, st ? sprout_last_error() : "(none)");
        }
        sprout_free(out);
        free(messages);
    }
    printf("%s: %d/%zu cases\n", json_name, passed, json_array_size(cases));
    CHECK_MSG(passed == (int)json_array_size(cases) && passed > 0, "%s: %d of %zu cases pass", json_name, passed,
              json_array_size(cases));
    free(extra);
    free(src);
    sprout_template_free(t);
    json_decref(spec);
}

static bool run_case(const char *dir, const char *name, void *ctx) {
    (void)ctx;
    run_case_file(dir, name);
    return true;
}

static void test_shared_templates(void) {
    const int files = test_for_each_shared_file("chat_templates", ".json", run_case, NULL);
    CHECK_MSG(files >= 15, "only %d template case files", files);
}

/* Renders src with the given messages JSON (or none) at a fixed time. */
static sprout_status render(const char *src, const char *messages, const char *extra, char **out) {
    sprout_template *t = NULL;
    sprout_status st = sprout_template_parse(src, strlen(src), &t);
    if (st != SPROUT_OK) return st;
    sprout_template_options opt = {.struct_size = sizeof opt, .add_generation_prompt = true, .bos_token = "<s>",
                                   .extra_json = extra, .now = "2024-07-26T12:00:00"};
    size_t len;
    st = sprout_template_render_json(t, messages ? messages : "[]", &opt, out, &len);
    sprout_template_free(t);
    return st;
}

typedef struct lang_case {
    const char *src, *expected;
} lang_case;

/* Each expected string is what Python's jinja2 (trim_blocks,
 * lstrip_blocks) prints for the template. */
static const lang_case lang_cases[] = {
    {"{{ 1 + 2 }}", "3"},
    {"{{ 'a' ~ 1 ~ none }}", "a1None"},
    {"{{ [1, 2, 3][-1] }}|{{ 'hello'[1:3] }}|{{ 'hello'[::-1] }}|{{ [1,2,3][1:] }}|{{ 'h\u00e9llo'[1] }}", "3|el|olleh|[2, 3]|\xc3\xa9"},
    {"{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 7 / 2 }} {{ 6 / 3 }}", "3 -4 1 2 1024 3.5 2.0"},
    {"{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e-5 }} {{ 1e16 }} {{ 123.456 }} {{ 0.0001 }}", "1.0 0.30000000000000004 1e-05 1e+16 123.456 0.0001"},
    {"{% for x in [1,2,3] %}{{ loop.index }}{{ x }}{% if not loop.last %},{% endif %}{% endfor %}", "11,22,33"},
    {"{% for x in 'ab' %}{{ loop.revindex }}{{ loop.length }}{{ loop.first }}{% endfor %}", "22True12False"},
    {"{% for x in [1, 2, 3] %}{{ loop.previtem is defined }}{{ loop.nextitem|default('-') }};{% endfor %}", "False2;True3;True-;"},
    {"{% for x in [] %}x{% else %}empty{% endfor %}", "empty"},
    {"{% for x in range(10) if x % 3 == 0 %}{{ x }}{{ loop.length }} {% endfor %}", "04 34 64 94 "},
    {"{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}", "0134"},
    {"{% set ns = namespace(c=0) %}{% for i in [1,2,3] %}{% set ns.c = ns.c + i %}{% endfor %}{{ ns.c }}", "6"},
    {"{% set x = 1 %}{% for i in [1] %}{% set x = 5 %}{% endfor %}{{ x }}", "1"},
    {"{% set x = 1 %}{% if true %}{% set x = 5 %}{% endif %}{{ x }}", "5"},
    {"{% set a, b = 1, 2 %}{{ b }}{{ a }}", "21"},
    {"{% set b %}hi {{ 1 }}{% endset %}[{{ b }}]", "[hi 1]"},
    {"{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Bob') }} {{ greet('Al', punct='?') }}", "Hi Bob! Hi Al?"},
    {"{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}", "321"},
    {"{{ x is defined }} {{ none is none }} {{ 'a' is string }} {{ {} is mapping }} {{ [] is iterable }} {{ 3 is number }} "
     "{{ false is false }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ x is not defined }} {{ 1 is equalto 1 }}",
     "False True True True True True True True True True True"},
    {"{{ '  a b  '|trim }}|{{ 'abc'|upper }}|{{ 'ABC'|lower }}|{{ 'hello world'|title }}|{{ 'hELLO'|capitalize }}|{{ [1,2]|length }}|{{ 'h\u00e9llo'|length }}",
     "a b|ABC|abc|Hello World|Hello|2|5"},
    {"{{ x|default('d') }} {{ ''|default('e', true) }} {{ 0|default(5) }} {{ none|default('n') }}", "d e 0 None"},
    {"{{ messages|selectattr('role', 'equalto', 'user')|map(attribute='content')|join(',') }}|{{ messages|rejectattr('role', 'equalto', 'user')|list|length }}|{{ messages|map(attribute='role')|first }}",
     "a,c|1|user"},
    {"{{ {'a': [1, 'x', none, true], 'b': 1.5, 'c': 'q\"\\\n\u00e9'}|tojson }}", "{\"a\": [1, \"x\", null, true], \"b\": 1.5, \"c\": \"q\\\"\u00e9\"}"},
    {"{{ {'a': [1, 2], 'b': {}}|tojson(indent=2) }}", "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {}\n}"},
    {"{{ {'a': 1, 'b': 'x', 'c': [none, true, 1.0]}|string }}", "{'a': 1, 'b': 'x', 'c': [None, True, 1.0]}"},
    {"{{ [\"it's\", 'say \"hi\"', 'both \\' \"', 'nl\\n']|string }}", "[\"it's\", 'say \"hi\"', 'both \\' \"', 'nl\\n']"},
    {"{% for k, v in {'a': 1, 'b': 2}|items %}{{ k }}={{ v }};{% endfor %}{% for k, v in {'c': 3}.items() %}{{ k }}{{ v }}{% endfor %}", "a=1;b=2;c3"},
    {"{% set d = {'k': 'v', 'items': 'x'} %}{{ d.get('zz', 'none') }} {{ d.get('k') }} {{ d.k }} {{ d['items'] }} {{ d.keys()|list }}", "none v v x ['k', 'items']"},
    {"{{ '  x '.strip() }}|{{ 'a,b,c'.split(',')[1] }}|{{ 'abc'.startswith('ab') }}|{{ 'abc'.endswith(('x', 'c')) }}|"
     "{{ 'aXbX'.replace('X', '-') }}|{{ 'xxhixx'.strip('x') }}|{{ '\n\nhi'.lstrip('\n') }}|{{ 'a b  c'.split() }}|{{ 'a<think>b</think>c'.split('</think>')[-1] }}",
     "x|b|True|True|a-b-|hi|hi|['a', 'b', 'c']|c"},
    {"{{ '{} and {name}'.format(1, name='x') }}|{{ 'ab'.upper() }}{{ 'AB'.lower() }}", "1 and x|ABab"},
    {"{{ 'y' if true else 'n' }}{{ 'y' if false }}", "y"},
    {"{{ 'b' in 'abc' }} {{ 2 in [1,2] }} {{ 'k' in {'k':1} }} {{ 3 not in [1] }} {{ 'x' in undefined_var }}", "True True True True False"},
    {"a  {%- if true -%}  b  {%- endif -%}  c", "abc"},
    {"{% if true %}\n    x\n  {% endif %}\ny", "    x\ny"},
    {"a{# c #}b\n{# d #}\nc", "ab\nc"},
    {"  {% if true %}x{% endif %}\n  {{ 'v' }}", "x  v"},
    {"{%+ if true %}x{% endif +%}\ny", "x\ny"},
    {"{% raw %}{{ x }}{% endraw %}", "{{ x }}"},
    {"hi\n", "hi"},
    {"hi\n\n", "hi\n"},
    {"{{ \"a\\tb\\u00e9\\x41\" }}", "a\tb\xc3\xa9" "A"},
    {"{{ y }}|{{ {}.missing }}|{{ 'abc'[5] }}|{{ none.x }}", "|||"},
    {"{{ strftime_now('%Y-%m-%d %A %d %b %Y') }}", "2024-07-26 Friday 26 Jul 2024"},
    {"{% filter upper %}abc{% endfilter %}", "ABC"},
    {"{{ [3, 1, 2]|sort|join(',') }} {{ [1, 2, 2, 3]|unique|list|length }} {{ ['b', 'A']|sort|first }} {{ [1, 5, 3]|max }}", "1,2,3 3 A 5"},
    {"{{ range(3)|list }} {{ (1, 2) }} {{ (1,) }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }}", "[0, 1, 2] (1, 2) (1,) True False"},
    {"{{ true and 'x' }} {{ 0 or 'y' }} {{ not '' }} {{ -3|abs }} {{ '%s' }}", "x y True 3 %s"},
    {"{{ {'a': 1} }} {{ none }} {{ true }} {{ [] }} {{ 'x' * 3 }} {{ [1] + [2] }}", "{'a': 1} None True [] xxx [1, 2]"},
    {"{{ bos_token }}{{ eos_token }}{{ messages[0].content }}{{ messages[-1]['role'] }}", "<s>auser"},
    {"{% for m in messages %}{% if loop.index0 % 2 == 0 %}{{ m.role[0] }}{% endif %}{% endfor %}", "uu"},
    {"{{ 'line1\nline2'|indent(2) }}|{{ 'a b c'|wordcount }}|{{ '5'|int + 1 }}|{{ '2.5'|float }}|{{ 2.567|round(2) }}", "line1\n  line2|3|6|2.5|2.57"},
    /* printf-style formatting, as Python's jinja2 renders it */
    {"{{ '%s-%d'|format('a', 3) }}|{{ '%s' % 5 }}|{{ '%s and %s' % ('a', 'b') }}|{{ '%s' % [1, 'a'] }}|{{ '%r' % {'a': 1} }}",
     "a-3|5|a and b|[1, 'a']|{'a': 1}"},
    {"{{ '%5.2f|%-6s|%06d|%x|%X|%o|%e|%g|%r|%c|%c|%%|%+d|% d|%#x' % (3.14159, 'ab', 42, 255, 255, 8, 12345.678, 0.0001, 'q', 65, '\u00e9', 7, 7, 255) }}",
     " 3.14|ab    |000042|ff|FF|10|1.234568e+04|0.0001|'q'|A|\u00e9|%|+7| 7|0xff"},
    {"{{ '%.2s|%5s|%-5s|' % ('h\u00e9llo', '\u00e9', '\u00fc') }}{{ '%d' % 3.9 }}{{ '%d' % true }}{{ '%s' % none }}",
     "h\u00e9|    \u00e9|\u00fc    |31None"},
    {"{{ '%5c|%-3c|%05s|%-05d|%+.3e|% 5.1f|%5c' % ('x', 66, 'x', 3, 12.5, -2.25, 66) }}", "    x|B  |    x|3    |+1.250e+01| -2.2|    B"},
    /* floats past int64 in float conversions (fuzz_template's finding: their int part was taken anyway) */
    {"{{ '%e|%g' % (6.01835e+27, 1e300) }}", "6.018350e+27|1e+300"},
    /* an empty sequence repeated 2**62 times (fuzz_template's finding: it looped that many times) */
    {"{{ '' * 2**62 }}|{{ [] * 4611686018427387904 }}|{{ 2**62 * '' }}", "|[]|"},
    /* with and call blocks, macro varargs/kwargs, and more of the filters and str methods, as Python's jinja2 renders them */
    {"{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{% set a = 5 %}{% with a = 1, b = a %}{{ a }}{{ b }}{% set c = 2 %}{% endwith %}{{ a }}{{ c is defined }}", "3155False"},
    {"{% macro list(items) %}<{% for i in items %}{{ caller(i, loop.index) }}{% endfor %}>{% endmacro %}{% call(item, n=0) list(['a', 'b']) %}{{ n }}{{ item|upper }}{% endcall %}{% macro box() %}[{{ caller() }}]{% endmacro %}{% call box() %}x{% endcall %}", "<1A2B>[x]"},
    {"{% macro f(a, b=2) %}{{ a }}{{ b }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ f(1) }}{{ f(1, 3, 4) }}{{ f(1, z=4) }} {{ f.name }} {{ f.arguments }}", "12(){}13(4,){}12(){'z': 4} f ('a', 'b')"},
    {"{% for i in range(3) %}{{ loop.cycle('a', 'b') }}{% endfor %} {{ 0.5|round }} {{ 1.5|round }} {{ 2.5|round }} {{ 0.125|round(2) }} {{ 1250|round(-2) }} {{ 5|round }} {{ 2.5|round(0, 'ceil') }}", "aba 0.0 2.0 2.0 0.12 1200 5 3.0"},
    {"{{ {'b': 1, 'A': 2, 'a': 0}|dictsort }} {{ {'b': 1, 'a': 2}|dictsort(by='value', reverse=true) }} {{ ['B', 'a', 'b']|unique|list }} {{ ['B', 'b']|unique(true)|list }}", "[('A', 2), ('a', 0), ('b', 1)] [('a', 2), ('b', 1)] ['B', 'a'] ['B', 'b']"},
    {"{{ 'a,b,c'.rsplit(',', 1) }} {{ ' a  b c '.rsplit(None, 1) }} {{ 'x</think>y</think>z'.rsplit('</think>', 1)[0] }} {{ 'a-b-c'.partition('-') }} {{ 'a-b-c'.rpartition('-') }} {{ 'abc'.partition('-') }}", "['a,b', 'c'] [' a  b', 'c'] x</think>y ('a', '-', 'b-c') ('a-b', '-', 'c') ('abc', '', '')"},
    {"{{ 'hello'.rfind('l') }} {{ 'h\u00e9llo'.index('l') }} {{ 'ab'.center(7, '*') }} {{ 'x'.ljust(3, '-') }}{{ 'x'.rjust(3) }} {{ '-7'.zfill(4) }} {{ 'Ab'.swapcase() }} {{ 'a\\nb\\r\\nc'.splitlines() }} {{ 'think'.removeprefix('th') }}{{ 'think'.removesuffix('nk') }}", "3 2 ***ab** x--  x -007 aB ['a', 'b', 'c'] inkthi"},
    {"{{ 'ABC'.isupper() }} {{ 'A1'.isupper() }} {{ 'a'.islower() }} {{ '1'.islower() }} {{ 'a1'.isalnum() }} {{ '12'.isnumeric() }} {{ '12'.isdecimal() }}", "True True True False True True True"},
    {"{{ 'hello world'|truncate(8) }}|{{ 'hello world foo'|truncate(9, leeway=0) }}|{{ 'hello world'|truncate(8, true, '..', 0) }}|{{ 'ab'|center(6) }}|", "hello world|hello...|hello ..|  ab  |"},
    {"{{ [1, 2, 3, 4, 5]|batch(2)|list }} {{ [1, 2, 3, 4, 5]|batch(2, 0)|list }} {{ [1, 2, 3, 4, 5]|slice(3, 'x')|list }} {{ [1, 2]|slice(3)|list }} {{ [1, 2]|batch(4, 'x')|list }}", "[[1, 2], [3, 4], [5]] [[1, 2], [3, 4], [5, 0]] [[1, 2], [3, 4], [5, 'x']] [[1], [2], []] [[1, 2, 'x', 'x']]"},
    {"{% for k, g in [{'a': 'x', 'b': 1}, {'a': 'y', 'b': 2}, {'a': 'X', 'b': 3}]|groupby('a') %}{{ k }}:{{ g|map(attribute='b')|join(',') }};{% endfor %}", "x:1,3;y:2;"},
    {"{{ '%(a)s-%(b)03d' % {'a': 'x', 'b': 3} }} {{ '%s' % {'a': 1} }} {{ '%(n)s!'|format(n='hi') }} {{ '100%%' % {} }}", "x-003 {'a': 1} hi! 100%"},
    /* transformers' tojson options */
    {"{{ {'b': '\u00e9', 'a': [1, 2]}|tojson(sort_keys=true) }} {{ {'b': '\u00e9\U0001F600'}|tojson(ensure_ascii=true) }} {{ {'b': [1, 2], 'a': {}}|tojson(separators=(',', ':')) }} {{ {'b': 1, 'a': 2}|tojson(sort_keys=true, indent=1) }}", "{\"a\": [1, 2], \"b\": \"\u00e9\"} {\"b\": \"\\u00e9\\ud83d\\ude00\"} {\"b\":[1,2],\"a\":{}} {\n \"a\": 2,\n \"b\": 1\n}"},
    {"{{ none|selectattr('type', 'equalto', 'x')|list }}{{ none|map(attribute='a')|list }}{{ ''|select|list }}{{ 0|reject|list }}", "[][][][]"},
    /* Markup: + after |safe or |escape escapes the plain operand (functionary-v3.1 relies on it); ~ does not */
    {"{{ '<a>'|safe + '<b>' }}|{{ '\"' + '<a>'|safe }}|{{ ('<a>'|safe + \"'\") + '&' }}|{{ '<a>' ~ '<b>'|safe ~ '\"' }}|{{ '<x>'|e + '<y>' }}|{{ '<x>'|e|e }}|{{ '<'|safe + 'x'|safe }}", "<a>&lt;b&gt;|&#34;<a>|<a>&#39;&amp;|<a><b>\"|&lt;x&gt;&lt;y&gt;|&lt;x&gt;|<x"},
    /* jinja2's joiner and cycler, str.casefold, the striptags filter */
    {"{% set j = joiner(', ') %}{% for i in range(3) %}{{ j() }}{{ i }}{% endfor %}|{% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}{{ c.current }}{{ c.reset() }}{{ c.current }}", "0, 1, 2|ababNonea"},
    {"{{ 'Stra\u00dfe HELLO'.casefold() }}|{{ '  <p>Hello   <i>world</i></p>\\n <!-- c -->end  '|striptags }}|{{ 'a &amp; b &lt;c&gt; &#65;&#x42; &nbsp;x'|striptags }}|{{ 'a < b'|striptags }}", "strasse hello|Hello world end|a & b <c> AB \u00a0x|a < b"},
    /* jinja2's wordwrap (Python's textwrap: hyphens, long words, whitespace at line ends) */
    {"{{ 'The quick brown fox jumps over the lazy dog'|wordwrap(10) }}", "The quick\nbrown fox\njumps over\nthe lazy\ndog"},
    {"{{ 'state-of-the-art e-mail supercalifragilistic\\n\\nnext  para'|wordwrap(7, wrapstring='|') }}",
     "state-|of-the-|art|e-mail |superca|lifragi|listic||next|para"},
    {"{{ 'a-b-c-d-e-f x--y tab\\there'|wordwrap(2, break_on_hyphens=false) }}", "a-\nb-\nc-\nd-\ne-\nf \nx-\n-y\nta\nb\t\nhe\nre"},
    {"{{ '  leading and trailing   '|wordwrap(4, false) }}|{{ 'na\u00efve \u65e5\u672c\u8a9e\u30c6\u30ad\u30b9\u30c8'|wordwrap(3) }}",
     "leading\nand\ntrailing|na\u00ef\nve \n\u65e5\u672c\u8a9e\n\u30c6\u30ad\u30b9\n\u30c8"},
    /* jinja2's filesizeformat and urlencode */
    {"{{ 1|filesizeformat }}|{{ 999|filesizeformat }}|{{ 1000|filesizeformat }}|{{ 123456789|filesizeformat }}|{{ 123456789|filesizeformat(true) }}|{{ 1e30|filesizeformat }}|{{ '2048'|filesizeformat }}|{{ -5|filesizeformat }}|{{ 1.5|filesizeformat }}",
     "1 Byte|999 Bytes|1.0 kB|123.5 MB|117.7 MiB|1000000.0 YB|2.0 kB|-5 Bytes|1 Bytes"},
    {"{{ 'a b/c?d=é&x~_.-'|urlencode }}|{{ {'a b': 'c/d', 'k': 1}|urlencode }}|{{ [('x', 'y z')]|urlencode }}|{{ 42|urlencode }}",
     "a%20b/c%3Fd%3D%C3%A9%26x~_.-|a+b=c%2Fd&k=1|x=y+z|42"},
    /* the filters, str methods, tests and globals no other case uses */
    {"{{ [1, 2]|count }} {{ x|d('z') }} {{ '<a>'|safe|forceescape }} {{ [1, 2, 3]|last }} {{ [3, 1, 2]|min }} {{ {'a': [1, "
     "'b']}|pprint }} {{ 'aXbXc'|replace('X', '-', 1) }} {{ [1, 2, 3]|reverse|list }} {{ 'abc'|reverse }} {{ [1, 2.5, 3]|sum }} {{ "
     "[{'n': 1}, {'n': 2}]|sum(attribute='n', start=10) }}",
     "2 z &lt;a&gt; 3 1 {'a': [1, 'b']} a-bXc [3, 2, 1] cba 6.5 13"},
    {"{{ 'hello world'.capitalize() }}|{{ 'hello world'.title() }}|{{ 'banana'.count('an') }}{{ 'ab'.count('') }}{{ [1, 2, "
     "1].count(1) }}|{{ 'abc'.find('c') }}{{ 'abc'.find('z') }}|{{ 'ab'.isalpha() }}{{ 'a1'.isalpha() }}{{ '12'.isdigit() }}{{ ' "
     "\\t'.isspace() }}{{ ''.isspace() }}|{{ '-'.join(['a', 'b']) }}|{{ 'xx  '.rstrip() }}.|{{ {'a': 1, 'b': 2}.values()|list }}|{{ "
     "[5, 6].index(6) }}",
     "Hello world|Hello World|232|2-1|TrueFalseTrueTrueFalse|a-b|xx.|[1, 2]|1"},
    {"{{ true is boolean }}{{ range is callable }}{{ 1 is eq 1 }}{{ 'x' is escaped }}{{ 1.5 is float }}{{ 3 is ge 3 }}{{ 3 is "
     "greaterthan 2 }}{{ 3 is gt 3 }}{{ 'b' is in 'abc' }}{{ 2 is in [1, 2] }}{{ 1 is integer }}{{ 1.0 is integer }}{{ 2 is le 1 }}{{ "
     "1 is lessthan 2 }}{{ 'ab' is lower }}{{ 'Ab' is lower }}{{ 1 is lt 2 }}{{ 1 is ne 1 }}{{ 3 is odd }}{{ none is sameas none }}{{ "
     "'ab' is sequence }}{{ 3 is sequence }}{{ true is true }}{{ 1 is true }}{{ y is undefined }}{{ 'AB' is upper }}{{ 5 is upper }}",
     "TrueTrueTrueFalseTrueTrueTrueFalseTrueTrueTrueFalseFalseTrueTrueFalseTrueFalseTrueTrueTrueFalseTrueFalseTrueTrueFalse"},
    {"{{ [1, 2, 3]|select('>', 1)|list }}{{ [1, 2, 3]|select('<=', 2)|list }}{{ [1, 2, 3]|select('==', 2)|list }}{{ [1, 2, "
     "3]|select('!=', 2)|list }}{{ [1, 2, 3]|select('>=', 3)|list }}{{ [1, 2, 3]|select('<', 2)|list }}{{ [1, 2, "
     "3]|reject('odd')|list }} {{ dict(a=1, b='x') }} {{ dict(a=1).a }}",
     "[2, 3][1, 2][2][1, 3][3][1][2] {'a': 1, 'b': 'x'} 1"},
    {"{{ tools }}|{{ documents }}|{{ add_generation_prompt }}", "None|None|True"},
    {"{{ enable_thinking }}{{ extra.n + 1 }}", "False3"},
};

static const char *lang_messages =
    "[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":\"b\"},{\"role\":\"user\",\"content\":\"c\"}]";

static void test_language(void) {
    for (size_t i = 0; i < sizeof lang_cases / sizeof lang_cases[0]; i++) {
        char *out = NULL;
        sprout_status st = render(lang_cases[i].src, lang_messages, "{\"enable_thinking\": false, \"extra\": {\"n\": 2}}", &out);
        CHECK_MSG(st == SPROUT_OK && !strcmp(out, lang_cases[i].expected), "case %zu: %s\n  expected [%s]\n  got      [%s]", i,
                  lang_cases[i].src, lang_cases[i].expected, st == SPROUT_OK ? out : sprout_last_error());
        sprout_free(out);
    }
}

typedef struct error_case {
    const char *src, *needle;
    int line; /* 0: do not check */
} error_case;

static const error_case error_cases[] = {
    {"{% if x %}never closed", "endif", 1},
    {"line one\n{{ 1 + }}", "unexpected", 2},
    {"{% endfor %}", "endfor", 1},
    {"{% for x in [1] %}{% endif %}{% endfor %}", "endif", 1},
    {"{{ 'abc' + 1 }}", "unsupported operand type(s) for +: 'str' and 'int'", 1},
    {"{{ '%d' % 'x' }}", "%d format: a real number is required, not str", 1},
    {"{{ '%s %s' % ('a',) }}", "not enough arguments for format string", 1},
    {"{{ '%s' % ('a', 'b') }}", "not all arguments converted during string formatting", 1},
    {"{{ '%q' % 1 }}", "unsupported format character 'q'", 1},
    {"{{ '%999999999s' % 'a' }}", "format width or precision too large", 1},
    {"{{ 'x%'|format() }}", "incomplete format", 1},
    {"\n\n  {% for x in 5 %}{% endfor %}", "'int' object is not iterable", 3},
    {"{{ 1|bogus }}", "No filter named 'bogus'", 1},
    {"{{ 1 is bogus }}", "No test named 'bogus'", 1},
    {"{{ x.y }}", "'x' is undefined", 1},
    {"{{ {}.a.b }}", "'dict object' has no attribute 'a'", 1},
    {"{{ x + 1 }}", "'x' is undefined", 1},
    {"{% set x = 1 %}{% set x.a = 2 %}", "non-namespace", 1},
    {"{% break %}", "outside of a loop", 1},
    {"{% include 'x' %}", "not supported", 1},
    {"{{ 'unterminated }}", "unterminated string", 1},
    {"{# never closed", "comment", 1},
    {"{{ 1 }", "unexpected '}'", 1},
    {"{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "nested more than", 0},
    {"{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "steps", 0},
    {"{% for i in range(1000000) %}{{ 'x' * 1000 }}{% endfor %}", "output exceeds", 0},
    {"{% set ns = namespace(s='xx') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", "memory", 0},
    {"{{ 1 // 0 }}", "division or modulo by zero", 1},
    {"{{ range(10000000) }}", "too large", 1},
    {"{{ raise_exception('Only user and assistant roles') }}", "Only user and assistant roles", 1},
    {"{% macro m() %}x{% endmacro %}{% call m() %}y{% endcall %}", "special caller argument", 1},
    {"{% with a %}{% endwith %}", "expected '='", 1},
    {"{% call m %}x{% endcall %}", "expected call", 1},
    {"{{ '%(a)s' % {'b': 1} }}", "'a'", 1},
    {"{{ '%(a)s' % ('x',) }}", "format requires a mapping", 1},
    {"{{ 'x'.index('z') }}", "substring not found", 1},
    {"{{ [1]|batch(0) }}", "positive count", 1},
    {"{{ 'abc'|truncate(2) }}", "expected length >= 3", 1},
};

static void test_errors(void) {
    for (size_t i = 0; i < sizeof error_cases / sizeof error_cases[0]; i++) {
        char *out = NULL;
        sprout_status st = render(error_cases[i].src, NULL, NULL, &out);
        CHECK_MSG(st == SPROUT_ERR_FORMAT && strstr(sprout_last_error(), error_cases[i].needle),
                  "error case %zu: status %d, message '%s', wanted '%s'", i, st, st ? sprout_last_error() : "(none)",
                  error_cases[i].needle);
        if (error_cases[i].line)
            CHECK_MSG(sprout_template_error_line() == error_cases[i].line, "error case %zu: line %d, wanted %d", i,
                      sprout_template_error_line(), error_cases[i].line);
        CHECK(out == NULL);
    }
    /* expressions nested past the parser's limit */
    char deep[1024];
    size_t o = 0;
    o += (size_t)snprintf(deep, sizeof deep, "{{ ");
    for (int i = 0; i < 300; i++) deep[o++] = '(';
    deep[o++] = '1';
    for (int i = 0; i < 300; i++) deep[o++] = ')';
    snprintf(deep + o, sizeof deep - o, " }}");
    char *out = NULL;
    CHECK(render(deep, NULL, NULL, &out) == SPROUT_ERR_FORMAT && strstr(sprout_last_error(), "nested too deeply"));
    /* raise_exception's message comes out verbatim, marked as raised */
    CHECK(render("{{ raise_exception('boom') }}", NULL, NULL, &out) == SPROUT_ERR_FORMAT);
    CHECK(!strcmp(sprout_last_error(), "boom") && sprout_template_error_raised());
    CHECK(render("{{ x.y }}", NULL, NULL, &out) == SPROUT_ERR_FORMAT && !sprout_template_error_raised());
    CHECK(!strncmp(sprout_last_error(), "line 1, column ", 15));
    /* invalid UTF-8 in a string: iteration and length step through it the
     * same way, one byte per invalid byte (the fuzzer found a list sized by
     * one count and filled by the other) */
    CHECK(render("{% for c in '\x80\x80" "ab\xC3' %}[{{ c }}]{% endfor %}{{ '\x80\x80" "ab\xC3' | length }}", NULL, NULL, &out) == SPROUT_OK);
    CHECK_MSG(out && !strcmp(out, "[\x80][\x80][a][b][\xC3]5"), "got [%s]", out ? out : "(null)");
    free(out);
    out = NULL;
    /* bad inputs to the API */
    sprout_template *t = NULL;
    CHECK(sprout_template_parse("{{ 1 }}", 7, &t) == SPROUT_OK);
    sprout_template_options opt = {.struct_size = sizeof opt};
    size_t len;
    CHECK(sprout_template_render_json(t, "{not json", &opt, &out, &len) == SPROUT_ERR_INVALID_ARGUMENT);
    CHECK(sprout_template_render_json(t, "{}", &opt, &out, &len) == SPROUT_ERR_INVALID_ARGUMENT);
    opt.extra_json = "[1]";
    CHECK(sprout_template_render_json(t, "[]", &opt, &out, &len) == SPROUT_ERR_INVALID_ARGUMENT);
    opt.extra_json = NULL;
    opt.now = "yesterday";
    CHECK(sprout_template_render_json(t, "[]", &opt, &out, &len) == SPROUT_ERR_INVALID_ARGUMENT);
    sprout_template_free(t);
    sprout_template_free(NULL);
}

/* Where a template fails, for parse and render errors alike; messages given
 * as role/content pairs render as their JSON form does. */
static void test_error_column_and_pairs(void) {
    /* the outputs start as sentinels: a failing call must set them to NULL */
    sprout_template *t = (sprout_template *)&test_error_column_and_pairs;
    const char *bad = "hello\n  {{ 1 + }}";
    CHECK(sprout_template_parse(bad, strlen(bad), &t) == SPROUT_ERR_FORMAT && t == NULL);
    CHECK_MSG(sprout_template_error_line() == 2 && sprout_template_error_column() == 12, "line %d, column %d",
              sprout_template_error_line(), sprout_template_error_column());
    CHECK(!strncmp(sprout_last_error(), "line 2, column 12: ", 19));
    const char *undefined = "ab{{ x.y }}";
    CHECK(sprout_template_parse(undefined, strlen(undefined), &t) == SPROUT_OK);
    sprout_template_options opt = {.struct_size = sizeof opt, .add_generation_prompt = true};
    char *out = (char *)"sentinel";
    size_t len = 0;
    CHECK(sprout_template_render(t, NULL, 0, &opt, &out, &len) == SPROUT_ERR_FORMAT && out == NULL);
    CHECK_MSG(sprout_template_error_line() == 1 && sprout_template_error_column() == 7, "line %d, column %d",
              sprout_template_error_line(), sprout_template_error_column());
    sprout_template_free(t);

    const char *src = sprout_template_builtin("chatml");
    t = NULL;
    CHECK(src && sprout_template_parse(src, strlen(src), &t) == SPROUT_OK);
    const sprout_chat_message msgs[] = {{"system", "S"}, {"user", "say \"hi\"\n"}};
    CHECK(sprout_template_render(t, msgs, 2, &opt, &out, &len) == SPROUT_OK);
    const char *want = "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nsay \"hi\"\n<|im_end|>\n<|im_start|>assistant\n";
    CHECK_MSG(out && !strcmp(out, want) && len == strlen(want), "got [%s]", out ? out : "(null)");
    char *from_json = NULL;
    size_t json_len = 0;
    const char *json = "[{\"role\":\"system\",\"content\":\"S\"},{\"role\":\"user\",\"content\":\"say \\\"hi\\\"\\n\"}]";
    CHECK(sprout_template_render_json(t, json, &opt, &from_json, &json_len) == SPROUT_OK);
    CHECK(out && from_json && json_len == len && !memcmp(out, from_json, len));
    sprout_free(out);
    sprout_free(from_json);
    out = (char *)"sentinel";
    CHECK(sprout_template_render(t, msgs, 2, &opt, NULL, &len) == SPROUT_ERR_INVALID_ARGUMENT);
    CHECK(sprout_template_render(t, NULL, 1, &opt, &out, &len) == SPROUT_ERR_INVALID_ARGUMENT && out == NULL);
    sprout_template_free(t);
}

/* The built-in templates parse and render a conversation; ChatML renders
 * exactly what the real ChatML template in ../shared renders. */
static void test_builtins(void) {
    static const char *const names[] = {"chatml", "llama2", "llama3", "zephyr", "phi3", "gemma", "mistral"};
    const char *conv = "[{\"role\":\"system\",\"content\":\"S\"},{\"role\":\"user\",\"content\":\"U\"},"
                       "{\"role\":\"assistant\",\"content\":\"A\"},{\"role\":\"user\",\"content\":\"V\"}]";
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *src = sprout_template_builtin(names[i]);
        CHECK_MSG(src != NULL, "no built-in %s", names[i]);
        if (!src) continue;
        sprout_template *t = NULL;
        CHECK_MSG(sprout_template_parse(src, strlen(src), &t) == SPROUT_OK, "%s: %s", names[i], sprout_last_error());
        sprout_template_options opt = {sizeof opt, true, "<s>", "</s>", NULL, NULL};
        char *out = NULL;
        size_t len;
        CHECK_MSG(sprout_template_render_json(t, conv, &opt, &out, &len) == SPROUT_OK, "%s: %s", names[i], sprout_last_error());
        CHECK_MSG(out && strstr(out, "U") && strstr(out, "V") && strstr(out, "A"), "%s rendered '%s'", names[i], out ? out : "");
        sprout_free(out);
        sprout_template_free(t);
    }
    CHECK(sprout_template_builtin("nope") == NULL);

    char path[1024];
    snprintf(path, sizeof path, "%s/chat_templates/chatml-openhermes-2.5.json", test_shared_dir());
    json_t *spec = json_load_file(path, 0, NULL);
    const char *src = sprout_template_builtin("chatml");
    sprout_template *t = NULL;
    sprout_template_parse(src, strlen(src), &t);
    for (size_t i = 0; spec && t && i < json_array_size(json_object_get(spec, "cases")); i++) {
        const json_t *c = json_array_get(json_object_get(spec, "cases"), i);
        char *messages = dump(json_object_get(c, "messages"));
        sprout_template_options opt = {sizeof opt, json_is_true(json_object_get(c, "add_generation_prompt")), NULL, NULL, NULL, NULL};
        char *out = NULL;
        size_t len;
        CHECK(sprout_template_render_json(t, messages, &opt, &out, &len) == SPROUT_OK);
        CHECK_MSG(out && !strcmp(out, json_string_value(json_object_get(c, "expected"))), "chatml built-in differs on %s",
                  json_string_value(json_object_get(c, "id")));
        sprout_free(out);
        free(messages);
    }
    sprout_template_free(t);
    json_decref(spec);
}

static void test_model_templates(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tokenizer/ggml-vocab-qwen2.gguf", test_shared_dir());
    sprout_gguf *g = NULL;
    CHECK(sprout_gguf_open(path, &g) == SPROUT_OK);
    const char *src;
    size_t len;
    CHECK(sprout_template_for_model(g, NULL, &src, &len) == SPROUT_OK && len > 100 && strstr(src, "im_start"));
    CHECK(sprout_template_for_model(g, "zephyr", &src, &len) == SPROUT_OK && src == sprout_template_builtin("zephyr"));
    CHECK(sprout_template_for_model(g, "{{ 'own' }}", &src, &len) == SPROUT_OK && !strcmp(src, "{{ 'own' }}"));
    sprout_gguf_close(g);
    snprintf(path, sizeof path, "%s/models/stories260K.gguf", test_shared_dir());
    CHECK(sprout_gguf_open(path, &g) == SPROUT_OK);
    CHECK(sprout_template_for_model(g, NULL, &src, &len) == SPROUT_OK && src == sprout_template_builtin("chatml"));
    sprout_gguf_close(g);
}

int main(void) {
    test_shared_templates();
    test_language();
    test_errors();
    test_builtins();
    test_model_templates();
    test_error_column_and_pairs();
    TEST_MAIN_END();
}
