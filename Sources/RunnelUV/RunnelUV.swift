import Runnel
