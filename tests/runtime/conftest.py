from tests.api.shared import *  # noqa: F401,F403 - one compile cache for the whole session
