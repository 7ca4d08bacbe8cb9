/* kiln freestanding libc: <stdio.h>. Files are raw file descriptors with a write buffer
 * (stdout, files opened "w"); stderr is unbuffered. Reads are not buffered: the runtime
 * reads large blocks. Formatting is format.c's engine. */
#ifndef KILN_LIBC_STDIO_H_
#define KILN_LIBC_STDIO_H_

#include <stdarg.h>
#include <stddef.h>

typedef struct kiln_libc_file FILE;

extern FILE *stdin;
extern FILE *stdout;
extern FILE *stderr;

#define EOF (-1)
#define BUFSIZ 4096
#define SEEK_SET 0
#define SEEK_CUR 1
#define SEEK_END 2

FILE *fopen(const char *restrict path, const char *restrict mode);
int fclose(FILE *f);
int fflush(FILE *f);
size_t fread(void *restrict buf, size_t size, size_t n, FILE *restrict f);
size_t fwrite(const void *restrict buf, size_t size, size_t n, FILE *restrict f);
int ferror(FILE *f);
int feof(FILE *f);
void clearerr(FILE *f);
int fputs(const char *restrict s, FILE *restrict f);
int fputc(int c, FILE *f);
int putc(int c, FILE *f);
int putchar(int c);
int puts(const char *s);
int fgetc(FILE *f);
int getc(FILE *f);

int printf(const char *restrict fmt, ...) __attribute__((format(printf, 1, 2)));
int fprintf(FILE *restrict f, const char *restrict fmt, ...)
    __attribute__((format(printf, 2, 3)));
int sprintf(char *restrict buf, const char *restrict fmt, ...)
    __attribute__((format(printf, 2, 3)));
int snprintf(char *restrict buf, size_t n, const char *restrict fmt, ...)
    __attribute__((format(printf, 3, 4)));
int vprintf(const char *restrict fmt, va_list ap) __attribute__((format(printf, 1, 0)));
int vfprintf(FILE *restrict f, const char *restrict fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
int vsprintf(char *restrict buf, const char *restrict fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
int vsnprintf(char *restrict buf, size_t n, const char *restrict fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#endif
