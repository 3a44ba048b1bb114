/* fork() while two other threads keep calling the driver (the interpreter busy in them): every
 * child gets a session of its own and answers; a hung child is killed by its alarm.
 *     native_fork_stress      (prints "children ok N of 6"; exit status 0 when all are) */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
typedef int CUresult;
static CUresult (*attr)(int *, int, int);
static CUresult (*count)(int *);
static volatile int stop = 0;
static void *spin(void *arg) { int v; (void)arg; while (!stop) attr(&v, 1, 0); return 0; }
int main(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    CUresult (*init)(unsigned) = (CUresult (*)(unsigned))dlsym(lib, "cuInit");
    attr = (CUresult (*)(int *, int, int))dlsym(lib, "cuDeviceGetAttribute");
    count = (CUresult (*)(int *))dlsym(lib, "cuDeviceGetCount");
    if (init(0)) return 2;
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, spin, 0);
    int ok = 0;
    for (int i = 0; i < 6; i++) {
        usleep(20000);
        pid_t pid = fork();
        if (pid == 0) { alarm(60); int n = 0; _exit(count(&n) == 0 && n == 1 ? 0 : 1); }
        int status = 0;
        waitpid(pid, &status, 0);
        ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    stop = 1;
    for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
    printf("children ok %d of 6\n", ok);
    return ok == 6 ? 0 : 1;
}
