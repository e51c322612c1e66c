"""Host code generation: the HCFG's host func -> Python source (numpy + dycl.runtime)."""

from dycl.codegen.errors import CodegenError
from dycl.codegen.host_python import HostProgram, generate_host

__all__ = ["CodegenError", "HostProgram", "generate_host"]
