"""LeRobot 0.6.1's own training script (`lerobot-train`, lerobot.scripts.lerobot_train), run offline
(_lerobot_compat sets HF_HUB_OFFLINE and the cache folder before LeRobot is imported). Arguments are
lerobot-train's. Used by lerobot_run_resume.sh to write a real LeRobot training run that lrhost then
resumes."""
import _lerobot_compat  # noqa: F401  (must come before anything from lerobot)
from lerobot.scripts.lerobot_train import main

if __name__ == "__main__":
    main()
