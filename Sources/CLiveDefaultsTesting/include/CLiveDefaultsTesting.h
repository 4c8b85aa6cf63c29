#ifndef CLIVEDEFAULTS_TESTING_H
#define CLIVEDEFAULTS_TESTING_H

#include <stddef.h>

/// The bytes the process's heap has handed out and not had back: glibc's mallinfo2(3), summed over every
/// arena (uordblks) plus the chunks it mapped on their own (hblkhd). (Swift's Glibc module does not export
/// <malloc.h>.)
size_t livedefaults_heap_bytes_in_use(void);

#endif
