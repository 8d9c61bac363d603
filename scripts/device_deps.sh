#!/usr/bin/env bash
# Packs what ltfit needs to build on a bare GPU machine with no network (a lent device whose image
# has Python torch, a compiler, CMake and Ninja, but no OpenCV, yaml-cpp, spdlog, ...) into one
# archive, deps/device-deps.tar.xz, to carry there and unpack with scripts/device_build.sh:
#  - the Debian packages ltfit's CMake looks for (headers, CMake configs, libraries) and the
#    runtime libraries they load, unpacked with dpkg -x (nothing is installed here);
#  - of Boost only the headers boost/crc.hpp includes (the whole of libboost-dev is ~150 MB);
#  - a small static OpenCV (core, imgproc, imgcodecs; JPEG and PNG through the carried libjpeg62-turbo
#    and libpng, no GDAL, TIFF, WebP, OpenEXR), built from Debian's source package: Debian's own
#    imgcodecs pulls ~185 MB of libraries.
# Run it where apt reaches Debian bookworm (here); it needs a deb-src entry for the OpenCV
# sources, which it adds if missing. The OpenCV build takes ~15 minutes on two cores, once.
#
#   scripts/device_deps.sh            # -> deps/device-deps.tar.xz (~20 MB)
#
# Environment: DEPS_DIR (default ./deps), JOBS (default nproc).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEPS_DIR="${DEPS_DIR:-$ROOT/deps}"
JOBS="${JOBS:-$(nproc)}"
STAGE="$DEPS_DIR/stage"       # becomes the archive's top folder, ltfit-deps/
OPENCV_SRC="$DEPS_DIR/opencv-src"

log() { printf '\033[1m[device_deps]\033[0m %s\n' "$*" >&2; }

# Development packages (headers, CMake configs, link names) and the libraries they load at run
# time; on the device, scripts/device_build.sh activates only those the machine lacks.
DEV_PACKAGES=(libyaml-cpp-dev libspdlog-dev libfmt-dev catch2 libcli11-dev nlohmann-json3-dev
              libcurl4-openssl-dev libssl-dev libgloo-dev libprotobuf-dev protobuf-compiler
              zlib1g-dev libjpeg62-turbo-dev libpng-dev libre2-dev)
RUNTIME_PACKAGES=(libyaml-cpp0.7 libre2-9 libspdlog1.10 libfmt9 libcurl4 libprotobuf32 libprotobuf-lite32
                  libprotoc32 zlib1g libjpeg62-turbo libpng16-16 libssl3 libnghttp2-14 libpsl5
                  librtmp1 libssh2-1 libldap-2.5-0 libgssapi-krb5-2 libkrb5-3 libk5crypto3
                  libkrb5support0 libkeyutils1 libsasl2-2 libbrotli1 libzstd1 libidn2-0
                  libunistring2 libgnutls30 libnettle8 libhogweed6 libgmp10 libp11-kit0
                  libtasn1-6 libffi8 libcom-err2)

download_packages() {
  local debs="$DEPS_DIR/debs"
  mkdir -p "$debs"
  log "downloading ${#DEV_PACKAGES[@]} development and ${#RUNTIME_PACKAGES[@]} runtime packages"
  (cd "$debs" && apt-get download "${DEV_PACKAGES[@]}" "${RUNTIME_PACKAGES[@]}" libboost1.74-dev \
     >/dev/null)
  rm -rf "$STAGE" "$DEPS_DIR/boost-all"
  mkdir -p "$STAGE/root"
  for deb in "$debs"/*.deb; do
    case "$(basename "$deb")" in
      libboost1.74-dev_*) dpkg -x "$deb" "$DEPS_DIR/boost-all" ;;
      *) dpkg -x "$deb" "$STAGE/root" ;;
    esac
  done
  rm -rf "$STAGE/root/usr/share/doc" "$STAGE/root/usr/share/man" "$STAGE/root/usr/share/lintian"
}

# Only the Boost headers boost/crc.hpp reaches, found by the preprocessor.
copy_boost_subset() {
  local inc="$DEPS_DIR/boost-all/usr/include" n=0 header
  while read -r header; do
    mkdir -p "$STAGE/root/usr/include/$(dirname "${header#"$inc"/}")"
    cp "$header" "$STAGE/root/usr/include/${header#"$inc"/}"
    n=$((n + 1))
  done < <(printf '#include <boost/crc.hpp>\n#include <boost/version.hpp>\n' |
           g++ -std=c++17 -M -x c++ -I "$inc" - 2>/dev/null |
           tr ' \\' '\n\n' | grep "^$inc/boost/" | sort -u)
  ((n > 0)) || { log "no Boost headers found for boost/crc.hpp"; return 1; }
  # Boost's own CMake configs (the headers component), which find_package(Boost) reads first.
  mkdir -p "$STAGE/root/usr/lib/x86_64-linux-gnu/cmake"
  cp -a "$DEPS_DIR"/boost-all/usr/lib/x86_64-linux-gnu/cmake/{Boost-1.74.0,boost_headers-1.74.0,BoostDetectToolset-1.74.0.cmake} \
    "$STAGE/root/usr/lib/x86_64-linux-gnu/cmake/"
  log "Boost: $n headers for boost/crc.hpp"
}

# A static OpenCV with core, imgproc and imgcodecs only.
build_opencv() {
  local install="$DEPS_DIR/opencv-install"
  if [[ -f "$install/lib/libopencv_imgcodecs.a" ]]; then
    log "OpenCV: reusing $install"
  else
    if ! ls "$OPENCV_SRC"/opencv-4.*/CMakeLists.txt >/dev/null 2>&1; then
      if ! grep -rqs "deb-src" /etc/apt/sources.list /etc/apt/sources.list.d/; then
        log "adding a deb-src entry for Debian's sources"
        printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
          >/etc/apt/sources.list.d/ltfit-deb-src.sources
        apt-get update -qq
      fi
      mkdir -p "$OPENCV_SRC"
      (cd "$OPENCV_SRC" && apt-get source --download-only opencv >/dev/null &&
       tar xf opencv_*.orig.tar.xz)
    fi
    local src
    src="$(dirname "$(ls "$OPENCV_SRC"/opencv-4.*/CMakeLists.txt | head -1)")"
    log "OpenCV: building $src (static core, imgproc, imgcodecs) with $JOBS jobs"
    local off=(IPP ITT OPENCL LAPACK EIGEN PROTOBUF GDAL GDCM TIFF WEBP OPENEXR OPENJPEG JASPER
               GTK QT FFMPEG GSTREAMER V4L 1394 VA CUDA TBB OPENMP QUIRC VTK CAROTENE ADE
               IMGCODEC_SUNRASTER IMGCODEC_PFM)
    local args=() w
    for w in "${off[@]}"; do args+=("-DWITH_$w=OFF"); done
    cmake -S "$src" -B "$DEPS_DIR/opencv-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX="$install" -DBUILD_SHARED_LIBS=OFF \
      -DBUILD_LIST=core,imgproc,imgcodecs -DBUILD_TESTS=OFF -DBUILD_PERF_TESTS=OFF \
      -DBUILD_EXAMPLES=OFF -DBUILD_opencv_apps=OFF -DBUILD_DOCS=OFF -DBUILD_JAVA=OFF \
      -DBUILD_opencv_python3=OFF -DWITH_JPEG=ON -DBUILD_JPEG=OFF -DWITH_PNG=ON -DBUILD_PNG=OFF \
      -DBUILD_ZLIB=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DCV_TRACE=OFF \
      -DOPENCV_GENERATE_PKGCONFIG=OFF "${args[@]}" >"$DEPS_DIR/opencv-configure.log"
    cmake --build "$DEPS_DIR/opencv-build" --parallel "$JOBS" --target install \
      >"$DEPS_DIR/opencv-build.log"
  fi
  cp -a "$install" "$STAGE/opencv"
  rm -rf "$STAGE/opencv/share/opencv4/haarcascades" "$STAGE/opencv/share/opencv4/lbpcascades"
  # The install's CMake config names the build machine's libjpeg, libpng and zlib by absolute
  # path; the device reads them from the archive's root/ instead (device_build.sh rewrites it).
}

mkdir -p "$DEPS_DIR"
download_packages
copy_boost_subset
build_opencv
log "packing $DEPS_DIR/device-deps.tar.xz"
rm -rf "$DEPS_DIR/ltfit-deps"
mv "$STAGE" "$DEPS_DIR/ltfit-deps"
tar -C "$DEPS_DIR" -cJf "$DEPS_DIR/device-deps.tar.xz" ltfit-deps
rm -rf "$DEPS_DIR/ltfit-deps"
log "ready: $DEPS_DIR/device-deps.tar.xz ($(du -h "$DEPS_DIR/device-deps.tar.xz" | cut -f1)); carry it with scripts/device_build.sh"
