"""Host code generation: the HCFG's host func -> Python source (numpy + dycl.runtime)."""

from dycl.codegen.host_python import CodegenError, HostProgram, generate_host

__all__ = ["CodegenError", "HostProgram", "generate_host"]
