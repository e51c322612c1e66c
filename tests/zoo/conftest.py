import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Run zoo tests on one intra-op thread.

    The zoo's batched calibration is small; on a shared 2-core machine, two spinning OpenMP
    threads made the suite 5× slower in wall time than one thread. The tests do not depend on
    the thread count.
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
