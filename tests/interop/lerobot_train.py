"""LeRobot 0.4.4's own training script (`lerobot-train`, lerobot.scripts.lerobot_train), run with the
interop shims of _lerobot_compat (offline Hub, torchvision's removed VideoReader for the "pyav"
video backend). Arguments are lerobot-train's. Used by lerobot_run_resume.sh to write a real
LeRobot training run that lrhost then resumes."""
import _lerobot_compat  # noqa: F401  (must come before anything from lerobot)
from lerobot.scripts.lerobot_train import main

if __name__ == "__main__":
    main()
