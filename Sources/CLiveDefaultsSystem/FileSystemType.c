#include "CLiveDefaultsSystem.h"

#include <sys/vfs.h>

int livedefaults_file_system_type(const char *path, unsigned long long *type) {
    struct statfs info;
    if (statfs(path, &info) != 0) {
        return -1;
    }
    // f_type is a signed word on some architectures; the magic numbers are 32-bit patterns.
    *type = (unsigned long long)(unsigned int)info.f_type;
    return 0;
}
