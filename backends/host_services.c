/* The backends' part of the plugin host API. */
#include "backend.h"
#include "cpu/cpu_blas.h"
#include "opencl/cl_host.h"

void cg_backend_host_services(cg_host_api *api) {
    api->sgemm = cg_cpu_sgemm;
    api->cl_kernel = cg_host_cl_kernel;
    api->cl_launch = cg_host_cl_launch;
    api->cl_sgemm = cg_host_cl_sgemm;
    api->cl_info = cg_host_cl_info;
    api->cl_error_name = cg_host_cl_error_name;
}
