/*
 * print_env - what the dynamic loader gave this process.
 *
 * Prints "LD_PRELOAD=<value or (unset)>", "shim=yes|no" (whether
 * syncshim_version is defined in the process, i.e. the shim is loaded),
 * and "SYNCSHIM_POLICY=", "SYNCSHIM_CONFIG=" values. Exit 0.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static const char *val(const char *name)
{
	const char *v = getenv(name);
	return v ? v : "(unset)";
}

int main(void)
{
	printf("LD_PRELOAD=%s\n", val("LD_PRELOAD"));
	const char *(*version)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "syncshim_version");
	printf("shim=%s\n", version ? "yes" : "no");
	if (version)
		printf("version=%s\n", version());
	printf("SYNCSHIM_POLICY=%s\n", val("SYNCSHIM_POLICY"));
	printf("SYNCSHIM_CONFIG=%s\n", val("SYNCSHIM_CONFIG"));
	return 0;
}
