#!/usr/bin/env python3
"""
Write a small synthetic but WRF-like "wrfout" NetCDF file plus a matching DEM
for testing WindNinja's WRF (wxModelInitialization) path.

  wrfout : Lambert conformal conic (MAP_PROJ=1), TRUELAT1=30, TRUELAT2=60,
           STAND_LON=-98, DX=DY=4000 m, 40 x 40 mass points centred on
           45.0 N, 119.0 W, spherical earth R = 6370 km (as WRF/WPS), two
           times, U10/V10 GRID-RELATIVE (as in real wrfout files),
           COSALPHA/SINALPHA consistent with the analytic LCC rotation,
           T2 (K), QCLOUD (kg kg-1, 4-D), XLAT/XLONG, HGT, PSFC, ...
  DEM    : GeoTIFF, UTM 11N (EPSG:32611), 200 x 200 cells of 100 m
           (20 km x 20 km) centred on 45.0 N 119.0 W, Gaussian hill 500 m
           high on a 300 m base.

Usage: make_wrfout.py --outdir DIR [--nc4] [--cf-georef]

Used by compare.py (WindNinja and geofield on the same WRF file); written for geofield's
validation from WRF's documented formulas (module_llxy's Lambert conformal conic on WRF's
6370 km sphere) and WindNinja's source (wrfSurfInitialization.cpp), not copied from either.

  default      : real-wrfout-like file. With Debian's GDAL 3.6 the *stock* WindNinja
                 cannot georeference it (netCDF driver refuses SetGeoTransform on a
                 read-only dataset) -> use the patched build bin/gdal3fix/WindNinja_cli.
  --cf-georef  : adds CF x/y coordinate variables + grid_mapping that reproduce exactly
                 the geotransform/projection WindNinja tries to set; then the *stock*
                 build works too (outputs identical to gdal3fix + default file).
  --nc4        : write NetCDF-4/HDF5 instead of 64-bit-offset classic.
Needs numpy, netCDF4 and GDAL's Python bindings (Debian: python3-netcdf4, python3-gdal).
"""
import argparse
import os

import numpy as np
import netCDF4
from osgeo import gdal, osr

gdal.UseExceptions()

# ---------------------------------------------------------------- constants
R_EARTH = 6370000.0          # WRF EARTH_RADIUS_M
TRUELAT1 = 30.0
TRUELAT2 = 60.0
STAND_LON = -98.0
CEN_LAT = 45.0
CEN_LON = -119.0
DX = DY = 4000.0
NX = NY = 40                 # mass points (west_east, south_north)
NZ = 5                       # bottom_top (only for QCLOUD shape)
TIMES = ["2024-06-21_18:00:00", "2024-06-21_19:00:00"]
D2R = np.pi / 180.0


# ------------------------------------------------- WRF spherical LCC (module_llxy)
def lc_cone(t1, t2):
    """Cone factor exactly as WRF/WPS lc_cone()."""
    if abs(t1 - t2) > 0.1:
        return (np.log10(np.cos(t1 * D2R)) - np.log10(np.cos(t2 * D2R))) / (
            np.log10(np.tan((45.0 - abs(t1) / 2.0) * D2R))
            - np.log10(np.tan((45.0 - abs(t2) / 2.0) * D2R)))
    return np.sin(abs(t1) * D2R)


CONE = lc_cone(TRUELAT1, TRUELAT2)


def wrap180(dlon):
    return (np.asarray(dlon) + 180.0) % 360.0 - 180.0


def ll_to_xy(lat, lon):
    """lat/lon (deg) -> LCC metres with the pole at the origin (NH, as llij_lc)."""
    dlon = wrap180(np.asarray(lon) - STAND_LON)
    rm = (R_EARTH * np.cos(TRUELAT1 * D2R) / CONE) * (
        np.tan((90.0 - np.asarray(lat)) * D2R / 2.0)
        / np.tan((90.0 - TRUELAT1) * D2R / 2.0)) ** CONE
    arg = CONE * dlon * D2R
    return rm * np.sin(arg), -rm * np.cos(arg)


def xy_to_ll(x, y):
    """Inverse of ll_to_xy (as ijll_lc, northern hemisphere)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    r = np.hypot(x, y)
    lon = STAND_LON + np.degrees(np.arctan2(x, -y)) / CONE
    chi1 = (90.0 - TRUELAT1) * D2R
    chi = 2.0 * np.arctan((r * CONE / (R_EARTH * np.cos(TRUELAT1 * D2R))) ** (1.0 / CONE)
                          * np.tan(chi1 / 2.0))
    lat = 90.0 - np.degrees(chi)
    return lat, wrap180(lon)


def grid_rotation(lon):
    """WRF COSALPHA/SINALPHA angle (rad), defined so that (WRF docs / wrf-python)
         u_earth = U*COSALPHA - V*SINALPHA ;  v_earth = V*COSALPHA + U*SINALPHA
    For LCC this is alpha = -cone*(lon - STAND_LON) (NH), i.e. the angle from
    grid north to true north measured counter-clockwise; equivalently
    read_wrf_nc / wrf-python uvmet use angle = +cone*(lon-stand_lon) with
    u_e = v*sin(angle) + u*cos(angle). West of STAND_LON grid north points
    west of true north (bearing of grid +y = cone*dlon < 0), so SINALPHA > 0."""
    return -CONE * wrap180(np.asarray(lon) - STAND_LON) * D2R * np.sign(TRUELAT1)


# ------------------------------------------- WindNinja's view of the WRF grid
def windninja_lcc_wkt():
    """The LCC WKT WindNinja builds from the WRF global attributes
    (wrfSurfInitialization.cpp getNcGlobalAttributes(), MAP_PROJ == 1):
    WGS84 *ellipsoid* (not WRF's sphere), latitude_of_origin = MOAD_CEN_LAT."""
    f = lambda v: repr(float(np.float32(v)))
    return ('PROJCS["WGC 84 / WRF Lambert",GEOGCS["WGS 84",DATUM["World Geodetic System 1984",'
            'SPHEROID["WGS 84",6378137.0,298.257223563,AUTHORITY["EPSG","7030"]],AUTHORITY["EPSG","6326"]],'
            'PRIMEM["Greenwich",0.0,AUTHORITY["EPSG","8901"]],UNIT["degree",0.017453292519943295],'
            'AXIS["Geodetic longitude",EAST],AXIS["Geodetic latitude",NORTH],AUTHORITY["EPSG","4326"]],'
            'PROJECTION["Lambert_Conformal_Conic_2SP"],'
            'PARAMETER["central_meridian",%s],PARAMETER["latitude_of_origin",%s],'
            'PARAMETER["standard_parallel_1",%s],PARAMETER["false_easting",0.0],PARAMETER["false_northing",0.0],'
            'PARAMETER["standard_parallel_2",%s],UNIT["m",1.0],AXIS["Easting",EAST],AXIS["Northing",NORTH]]'
            % (f(STAND_LON), f(CEN_LAT), f(TRUELAT1), f(TRUELAT2)))


def windninja_xy_centres():
    """Mass-point centre coordinates (in windninja_lcc_wkt() metres) that WindNinja
    assigns to the WRF grid: centre = CEN_LAT/CEN_LON projected with the WKT above,
    upper-left = centre - (nx/2*DX, -ny/2*DY) (wrfSurfInitialization.cpp ~l.761-804)."""
    lcc = osr.SpatialReference()
    lcc.ImportFromWkt(windninja_lcc_wkt())
    lcc.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
    geo = lcc.CloneGeogCS()
    geo.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
    xc, yc, _ = osr.CoordinateTransformation(geo, lcc).TransformPoint(
        float(np.float32(CEN_LON)), float(np.float32(CEN_LAT)))
    x = xc + (np.arange(NX) - (NX - 1) / 2.0) * DX
    y = yc + (np.arange(NY) - (NY - 1) / 2.0) * DY      # south -> north
    return x, y


def add_cf_georef(ds):
    """Optional CF georeferencing that reproduces *exactly* the geotransform and
    projection WindNinja tries to attach (and that GDAL >= 3.x refuses to attach
    to a read-only netCDF dataset). Not present in real wrfout files."""
    x, y = windninja_xy_centres()
    vx = ds.createVariable("west_east", "f8", ("west_east",))
    vx.standard_name = "projection_x_coordinate"; vx.units = "m"; vx.axis = "X"
    vx.long_name = "x coordinate of WRF mass points in WindNinja's (WGS84-ellipsoid) LCC"
    vx[:] = x
    vy = ds.createVariable("south_north", "f8", ("south_north",))
    vy.standard_name = "projection_y_coordinate"; vy.units = "m"; vy.axis = "Y"
    vy.long_name = "y coordinate of WRF mass points in WindNinja's (WGS84-ellipsoid) LCC"
    vy[:] = y
    gm = ds.createVariable("WindNinja_LCC", "i4")
    gm.grid_mapping_name = "lambert_conformal_conic"
    gm.standard_parallel = np.array([TRUELAT1, TRUELAT2])
    gm.longitude_of_central_meridian = STAND_LON
    gm.latitude_of_projection_origin = CEN_LAT
    gm.false_easting = 0.0
    gm.false_northing = 0.0
    gm.semi_major_axis = 6378137.0
    gm.inverse_flattening = 298.257223563
    gm.crs_wkt = windninja_lcc_wkt()
    for name in ("U10", "V10", "T2", "QCLOUD"):
        ds[name].grid_mapping = "WindNinja_LCC"


# ------------------------------------------------------------------ wrfout
def make_wrfout(path, nc4=False, cf_georef=False, coords_attr=True):
    xc, yc = ll_to_xy(CEN_LAT, CEN_LON)
    ii = np.arange(NX) - (NX - 1) / 2.0
    jj = np.arange(NY) - (NY - 1) / 2.0
    X, Y = np.meshgrid(xc + ii * DX, yc + jj * DY)        # [south_north, west_east], row 0 = south
    XLAT, XLONG = xy_to_ll(X, Y)
    # staggered coordinates (U: x edges, V: y edges)
    iu = np.arange(NX + 1) - NX / 2.0
    jv = np.arange(NY + 1) - NY / 2.0
    XU, YU = np.meshgrid(xc + iu * DX, yc + jj * DY)
    XV, YV = np.meshgrid(xc + ii * DX, yc + jv * DY)
    XLAT_U, XLONG_U = xy_to_ll(XU, YU)
    XLAT_V, XLONG_V = xy_to_ll(XV, YV)

    alpha = grid_rotation(XLONG)
    cosa, sina = np.cos(alpha), np.sin(alpha)

    # map scale factor on the sphere: m = n*r / (R cos(lat))
    r = np.hypot(X, Y)
    MAPFAC_M = CONE * r / (R_EARTH * np.cos(XLAT * D2R))

    # --- earth-relative "truth" wind, then rotate to WRF grid-relative
    # normalised coordinates in [-1, 1]
    xn = ii[None, :] / ((NX - 1) / 2.0) * np.ones((NY, 1))
    yn = jj[:, None] / ((NY - 1) / 2.0) * np.ones((1, NX))
    U10, V10, T2, QCLOUD, PSFC = [], [], [], [], []
    UE, VE = [], []
    for t in range(len(TIMES)):
        spd = 6.5 + 1.5 * np.sin(np.pi * 0.5 * yn) * np.cos(np.pi * 0.25 * xn) + 0.5 * t
        spd = np.clip(spd, 5.0, 8.0)
        wdir = 247.5 + 22.5 * xn + 10.0 * t              # FROM direction, deg: 225 (W edge) .. 270 (E edge)
        ue = -spd * np.sin(wdir * D2R)
        ve = -spd * np.cos(wdir * D2R)
        ug = ue * cosa + ve * sina                        # inverse of WRF's grid->earth rotation
        vg = ve * cosa - ue * sina
        UE.append(ue); VE.append(ve)
        U10.append(ug); V10.append(vg)
        T2.append(298.0 + 2.0 * xn - 1.5 * yn + 1.0 * t)  # K
        q = np.zeros((NZ, NY, NX))
        q[2:4] = 2.0e-5 * np.exp(-((xn - 0.3) ** 2 + (yn + 0.2) ** 2) / 0.1)
        QCLOUD.append(q)
        PSFC.append(95000.0 + 300.0 * yn)

    fmt = "NETCDF4" if nc4 else "NETCDF3_64BIT_OFFSET"
    ds = netCDF4.Dataset(path, "w", format=fmt)
    ds.createDimension("Time", None)
    ds.createDimension("DateStrLen", 19)
    ds.createDimension("west_east", NX)
    ds.createDimension("south_north", NY)
    ds.createDimension("bottom_top", NZ)
    ds.createDimension("west_east_stag", NX + 1)
    ds.createDimension("south_north_stag", NY + 1)
    ds.createDimension("bottom_top_stag", NZ + 1)

    v = ds.createVariable("Times", "S1", ("Time", "DateStrLen"))
    v[:] = np.array([list(s) for s in TIMES], dtype="S1")

    def addvar(name, data, dims, units, desc, stagger="", coords="XLONG XLAT XTIME", order=None):
        var = ds.createVariable(name, "f4", dims)
        var.FieldType = np.int32(104)
        var.MemoryOrder = order or {3: "XY ", 4: "XYZ", 1: "0  "}[len(dims)]
        var.description = desc
        var.units = units
        var.stagger = stagger
        if coords and coords_attr:
            var.coordinates = coords
        var[:] = np.asarray(data, dtype=np.float32)
        return var

    nt = len(TIMES)
    d3 = ("Time", "south_north", "west_east")
    xt = ds.createVariable("XTIME", "f4", ("Time",))
    xt.FieldType = np.int32(104); xt.MemoryOrder = "0  "
    xt.description = "minutes since 2024-06-21 18:00:00"
    xt.units = "minutes since 2024-06-21 18:00:00"
    xt.stagger = ""
    xt[:] = np.arange(nt) * 60.0
    rep = lambda a: np.repeat(a[None], nt, axis=0)
    addvar("XLAT", rep(XLAT), d3, "degree_north", "LATITUDE, SOUTH IS NEGATIVE", coords="XLONG XLAT")
    addvar("XLONG", rep(XLONG), d3, "degree_east", "LONGITUDE, WEST IS NEGATIVE", coords="XLONG XLAT")
    addvar("XLAT_U", rep(XLAT_U), ("Time", "south_north", "west_east_stag"), "degree_north",
           "LATITUDE, SOUTH IS NEGATIVE", stagger="X", coords="XLONG_U XLAT_U")
    addvar("XLONG_U", rep(XLONG_U), ("Time", "south_north", "west_east_stag"), "degree_east",
           "LONGITUDE, WEST IS NEGATIVE", stagger="X", coords="XLONG_U XLAT_U")
    addvar("XLAT_V", rep(XLAT_V), ("Time", "south_north_stag", "west_east"), "degree_north",
           "LATITUDE, SOUTH IS NEGATIVE", stagger="Y", coords="XLONG_V XLAT_V")
    addvar("XLONG_V", rep(XLONG_V), ("Time", "south_north_stag", "west_east"), "degree_east",
           "LONGITUDE, WEST IS NEGATIVE", stagger="Y", coords="XLONG_V XLAT_V")
    addvar("COSALPHA", rep(cosa), d3, "", "Local cosine of map rotation")
    addvar("SINALPHA", rep(sina), d3, "", "Local sine of map rotation")
    addvar("MAPFAC_M", rep(MAPFAC_M), d3, "", "Map scale factor on mass grid")
    addvar("HGT", rep(np.full((NY, NX), 400.0)), d3, "m", "Terrain Height")
    addvar("U10", np.array(U10), d3, "m s-1", "U at 10 M")
    addvar("V10", np.array(V10), d3, "m s-1", "V at 10 M")
    addvar("T2", np.array(T2), d3, "K", "TEMP at 2 M")
    addvar("PSFC", np.array(PSFC), d3, "Pa", "SFC PRESSURE")
    addvar("QCLOUD", np.array(QCLOUD), ("Time", "bottom_top", "south_north", "west_east"),
           "kg kg-1", "Cloud water mixing ratio")

    ga = dict(
        TITLE=" OUTPUT FROM WRF V4.5.2 MODEL (synthetic test file)",
        START_DATE="2024-06-21_18:00:00",
        SIMULATION_START_DATE="2024-06-21_18:00:00",
        GRIDTYPE="C",
        MAP_PROJ_CHAR="Lambert Conformal",
    )
    for k, val in ga.items():
        setattr(ds, k, val)
    ds.setncattr("WEST-EAST_GRID_DIMENSION", np.int32(NX + 1))
    ds.setncattr("SOUTH-NORTH_GRID_DIMENSION", np.int32(NY + 1))
    ds.setncattr("BOTTOM-TOP_GRID_DIMENSION", np.int32(NZ + 1))
    for k, val in dict(DX=DX, DY=DY, CEN_LAT=CEN_LAT, CEN_LON=CEN_LON,
                       TRUELAT1=TRUELAT1, TRUELAT2=TRUELAT2, MOAD_CEN_LAT=CEN_LAT,
                       STAND_LON=STAND_LON, POLE_LAT=90.0, POLE_LON=0.0).items():
        ds.setncattr(k, np.float32(val))
    for k, val in dict(MAP_PROJ=1, GRID_ID=1, PARENT_ID=0, I_PARENT_START=1, J_PARENT_START=1,
                       PARENT_GRID_RATIO=1, NUM_LAND_CAT=21, ISWATER=17).items():
        ds.setncattr(k, np.int32(val))
    if cf_georef:
        add_cf_georef(ds)
    ds.close()

    # also write the earth-relative truth for later comparisons
    np.savez(os.path.splitext(path)[0] + "_truth.npz", XLAT=XLAT, XLONG=XLONG,
             UE=np.array(UE), VE=np.array(VE), U10=np.array(U10), V10=np.array(V10),
             T2=np.array(T2), alpha_deg=np.degrees(alpha), X=X, Y=Y)
    return XLAT, XLONG, alpha


# --------------------------------------------------------------------- DEM
def make_dem(path, hill_m=500.0):
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32611)
    ll = osr.SpatialReference()
    ll.ImportFromEPSG(4326)
    ll.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
    srs.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
    ct = osr.CoordinateTransformation(ll, srs)
    ex, ny_, _ = ct.TransformPoint(CEN_LON, CEN_LAT)
    ex, ny_ = round(ex / 100.0) * 100.0, round(ny_ / 100.0) * 100.0   # snap centre to 100 m
    n, cell = 200, 100.0
    x0, y1 = ex - n / 2 * cell, ny_ + n / 2 * cell
    xs = x0 + (np.arange(n) + 0.5) * cell
    ys = y1 - (np.arange(n) + 0.5) * cell
    XX, YY = np.meshgrid(xs, ys)
    sigma = 2000.0
    z = 300.0 + hill_m * np.exp(-((XX - ex) ** 2 + (YY - ny_) ** 2) / (2.0 * sigma ** 2))
    drv = gdal.GetDriverByName("GTiff")
    out = drv.Create(path, n, n, 1, gdal.GDT_Float32)
    out.SetGeoTransform((x0, cell, 0.0, y1, 0.0, -cell))
    out.SetProjection(srs.ExportToWkt())
    b = out.GetRasterBand(1)
    b.WriteArray(z.astype(np.float32))
    b.SetNoDataValue(-9999.0)
    out = None
    return ex, ny_


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--outdir", required=True)
    ap.add_argument("--nc4", action="store_true", help="write NetCDF-4 instead of 64-bit-offset classic")
    ap.add_argument("--cf-georef", action="store_true",
                    help="also add CF x/y coordinate variables + grid_mapping reproducing WindNinja's own "
                         "georeferencing; needed by a stock WindNinja built against GDAL >= 3.x "
                         "(which cannot SetGeoTransform on read-only netCDF); file name gets '_cf'")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    name = "wrfout_d01_2024-06-21_18:00:00"
    if a.cf_georef:
        name += "_cf"
    if a.nc4:
        name += "_nc4"
    wrf = os.path.join(a.outdir, name)
    XLAT, XLONG, alpha = make_wrfout(wrf, nc4=a.nc4, cf_georef=a.cf_georef)
    dem = os.path.join(a.outdir, "dem_hill_utm11.tif")
    ex, ny_ = make_dem(dem)
    print("wrote", wrf)
    print("  cone = %.6f ; XLAT %.4f..%.4f ; XLONG %.4f..%.4f" % (CONE, XLAT.min(), XLAT.max(), XLONG.min(), XLONG.max()))
    print("  WRF alpha (atan2(SINALPHA,COSALPHA)): %.3f..%.3f deg (%.3f at centre)" % (
        np.degrees(alpha).min(), np.degrees(alpha).max(), np.degrees(grid_rotation(CEN_LON))))
    print("wrote", dem, "centre UTM11 E=%.1f N=%.1f" % (ex, ny_))


if __name__ == "__main__":
    main()
