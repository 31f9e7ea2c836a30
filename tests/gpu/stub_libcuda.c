/* A library named libcuda.so.1 with nothing in it: where it is on the library path, sdcscan finds
 * "the NVIDIA driver" and loads its GPU module, which then says the driver is unusable (tests/cli/
 * no_driver.sh: the module is loaded only where libcuda.so.1 is found). */
int sdc_stub_libcuda(void);
int sdc_stub_libcuda(void)
{
	return 0;
}
