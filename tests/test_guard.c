/* The server's network guards as pure functions: the API key compared
 * whatever its length and content (equal only when equal), '*' wildcards,
 * Host headers against loopback and --allowed-hosts (DNS rebinding), and
 * Origins against the page's own, Ollama's defaults and --allowed-origins.
 * The same checks against a real server: tests/net/test_net.mjs. */
#include "server/server_internal.h"
#include "test_util.h"

int main(void) {
    /* the key: a prefix, an extension and one changed byte are all different */
    CHECK(sp_secret_equal("sk-secret", "sk-secret"));
    CHECK(!sp_secret_equal("sk-secret", "sk-secre"));
    CHECK(!sp_secret_equal("sk-secret", "sk-secret1"));
    CHECK(!sp_secret_equal("sk-secret", "sk-secreT"));
    CHECK(!sp_secret_equal("sk-secret", "xk-secret"));
    CHECK(!sp_secret_equal("sk-secret", ""));
    CHECK(!sp_secret_equal("", "")); /* an empty key matches nothing (the server has no key then) */

    CHECK(sp_wildcard_match("*.example.com", "a.b.example.com"));
    CHECK(!sp_wildcard_match("*.example.com", "example.com"));
    CHECK(sp_wildcard_match("http://localhost:*", "http://LOCALHOST:3000"));
    CHECK(!sp_wildcard_match("http://localhost:*", "http://localhost.evil.com"));
    CHECK(sp_wildcard_match("a*b*c", "aXXbYYc"));
    CHECK(!sp_wildcard_match("a*b*c", "aXXbYY"));
    CHECK(sp_wildcard_match("*", ""));

    const char *const hosts[] = {"sprout.lan", "*.home.arpa"};
    const char *const loopback[] = {"localhost", "localhost:8080", "LOCALHOST.", "127.0.0.1", "127.1.2.3:80", "[::1]", "[::1]:8080",
                                    "::1", "app.localhost:3000", "[::ffff:127.0.0.1]:1"};
    for (size_t i = 0; i < sizeof loopback / sizeof loopback[0]; i++) CHECK_MSG(sp_host_allowed(loopback[i], NULL, 0), "%s", loopback[i]);
    const char *const foreign[] = {"evil.com", "evil.com:8080", "localhost.evil.com", "128.0.0.1", "[::2]:80", "10.0.0.1", "[::1",
                                   "", "127.0.0.1.nip.io"};
    for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++) CHECK_MSG(!sp_host_allowed(foreign[i], hosts, 2), "%s", foreign[i]);
    CHECK(sp_host_allowed("sprout.lan:8080", hosts, 2));
    CHECK(sp_host_allowed("nas.home.arpa", hosts, 2));
    CHECK(!sp_host_allowed("sprout.lan", NULL, 0));

    const char *const origins[] = {"https://*.example.com", "chrome-extension://abc"};
    CHECK(sp_origin_allowed("http://127.0.0.1:8080", "127.0.0.1:8080", NULL, 0)); /* the page's own */
    CHECK(sp_origin_allowed("http://sprout.lan:8080", "sprout.lan:8080", NULL, 0));
    CHECK(sp_origin_allowed("http://localhost:3000", "127.0.0.1:8080", NULL, 0)); /* Ollama's defaults */
    CHECK(sp_origin_allowed("tauri://localhost", "127.0.0.1:8080", NULL, 0));
    CHECK(!sp_origin_allowed("http://evil.com", "127.0.0.1:8080", NULL, 0));
    CHECK(!sp_origin_allowed("http://localhost.evil.com", "127.0.0.1:8080", NULL, 0));
    CHECK(!sp_origin_allowed("null", "127.0.0.1:8080", NULL, 0));
    CHECK(!sp_origin_allowed("http://evil.com", NULL, NULL, 0));
    CHECK(sp_origin_allowed("https://app.example.com", "127.0.0.1:8080", origins, 2));
    CHECK(!sp_origin_allowed("http://app.example.com", "127.0.0.1:8080", origins, 2));
    CHECK(sp_origin_allowed("chrome-extension://abc", "127.0.0.1:8080", origins, 2));
    TEST_MAIN_END();
}
