#ifndef CLIVEDEFAULTS_SYSTEM_H
#define CLIVEDEFAULTS_SYSTEM_H

/// The `f_type` that statfs(2) reports for the file system holding `path`, in `type`; returns 0, or -1 with
/// errno set. (Swift's Glibc module does not export <sys/vfs.h>.)
int livedefaults_file_system_type(const char *path, unsigned long long *type);

#endif
