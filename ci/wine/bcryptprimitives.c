/* Wine 8.0 has no ProcessPrng in bcryptprimitives.dll, and Rust's std
 * (1.78+) imports it for its random keys: without it a Rust .exe does not
 * start under Wine. This DLL, put next to the .exe, provides it by
 * forwarding to BCryptGenRandom (bcrypt.dll, which Wine has). CI only: never
 * shipped, never needed on real Windows (8.1 and later have ProcessPrng). */
#include <windows.h>
#include <bcrypt.h>

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (BCryptGenRandom(NULL, data, n, BCRYPT_USE_SYSTEM_PREFERRED_RNG) != 0) return FALSE;
        data += n;
        len -= n;
    }
    return TRUE;
}
