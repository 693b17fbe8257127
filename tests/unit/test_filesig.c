/* envd /files signature: the two vectors of docs/protocol.md "Signed
 * URLs". */
#include "check.h"
#include "filesig.h"

int main(void)
{
    char sig[128];

    CHECK_INT(abx_filesig_compute("/home/user/a.txt", "read", NULL, "tok", -1,
                                  sig, sizeof sig), 0);
    CHECK_STR(sig, "v1_Zkbb3914oLJLvMBzCAHQhm2ydBLxbSx2eQUR/kLdvIY");
    CHECK_INT(abx_filesig_compute("/home/user/a.txt", "write", "root", "tok",
                                  1700000000LL, sig, sizeof sig), 0);
    CHECK_STR(sig, "v1_3hlIyTfkHTdfJKgNFUJamAQ7q+SOj3624i+geS/jqCM");
    /* Empty username and absent username hash the same. */
    CHECK_INT(abx_filesig_compute("/home/user/a.txt", "read", "", "tok", -1,
                                  sig, sizeof sig), 0);
    CHECK_STR(sig, "v1_Zkbb3914oLJLvMBzCAHQhm2ydBLxbSx2eQUR/kLdvIY");
    CHECK_INT(abx_filesig_compute("p", "read", "", "tok", -1, sig, 10), -1);
    CHECK(abx_filesig_equal("abc", "abc"));
    CHECK(!abx_filesig_equal("abc", "abd"));
    CHECK(!abx_filesig_equal("abc", "abcd"));
    return CHECK_DONE();
}
