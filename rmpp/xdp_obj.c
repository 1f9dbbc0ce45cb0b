/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * xdp_obj.c - the XDP program's object file (xdp/rmpp_xdp.bpf.c compiled with
 * clang -target bpf by the build) embedded in librmpp, so that nothing has
 * to be found on disk at run time.  RMPP_XDP_OBJ_PATH is set by Makefile.am.
 */
#ifndef RMPP_XDP_OBJ_PATH
#error "RMPP_XDP_OBJ_PATH: the path of rmpp_xdp.bpf.o (set by rmpp/Makefile.am)"
#endif

__asm__(".pushsection .rodata.rmpp_xdp_obj,\"a\",@progbits\n"
        ".balign 8\n"
        ".globl rmpp_xdp_obj\n"
        ".hidden rmpp_xdp_obj\n"
        "rmpp_xdp_obj:\n"
        ".incbin \"" RMPP_XDP_OBJ_PATH "\"\n"
        ".globl rmpp_xdp_obj_end\n"
        ".hidden rmpp_xdp_obj_end\n"
        "rmpp_xdp_obj_end:\n"
        ".popsection\n");
