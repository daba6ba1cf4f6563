# FFmpeg's libav* from Debian (pkg-config): demux/decode mp4 (AV1 through dav1d, H.264, HEVC), PNG
# image columns, and the dataset writer's encoders (libsvtav1, else libx264).
pkg_check_modules(FFMPEG REQUIRED IMPORTED_TARGET libavformat libavcodec libavutil libswscale)
