/* sdcscan: find machines that compute wrong answers without crashing. See man/sdcscan.1. */
#include "command.h"

int main(int argc, char **argv)
{
	return sdc_main(argc, argv);
}
